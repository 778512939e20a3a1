import type { ConformanceCase } from '../harness.js';
import { cloudxCase, cloudxResponsesCase } from './cloudx.js';
import { msgvendorCase, vertexMessagesCase } from './messages.js';
import { openaiCase } from './openai.js';

/** Every provider row of the conformance suite: one line per row. */
export const CASES: readonly ConformanceCase[] = [
  openaiCase,
  cloudxCase,
  cloudxResponsesCase,
  msgvendorCase,
  vertexMessagesCase,
];
