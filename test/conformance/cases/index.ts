import type { ConformanceCase } from '../harness.js';
import { cloudxCase, cloudxResponsesCase } from './cloudx.js';
import { cloudyCase } from './converse.js';
import { genvendorCase, vertexGenerateContentCase } from './generate-content.js';
import { msgvendorCase, vertexMessagesCase } from './messages.js';
import { openaiCase } from './openai.js';
import { chatToConverseCase, chatToGenerateContentCase, chatToMessagesCase } from './translated.js';

/** Every provider row of the conformance suite: one line per row. */
export const CASES: readonly ConformanceCase[] = [
  openaiCase,
  cloudxCase,
  cloudxResponsesCase,
  msgvendorCase,
  vertexMessagesCase,
  genvendorCase,
  vertexGenerateContentCase,
  cloudyCase,
  chatToMessagesCase,
  chatToConverseCase,
  chatToGenerateContentCase,
];
