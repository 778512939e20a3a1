import { num, sseUsageReader } from '../sse.js';
import type { StreamUsageReader, Usage } from '../types.js';

/** `usageMetadata` of a GenerateContentResponse (thinking tokens are billed as output). */
export function generateContentUsage(reply: unknown): Usage | undefined {
  if (typeof reply !== 'object' || reply === null) return undefined;
  const m = (reply as Record<string, unknown>)['usageMetadata'] as Record<string, unknown> | undefined;
  if (!m) return undefined;
  return {
    input_tokens: num(m['promptTokenCount']),
    output_tokens: num(m['candidatesTokenCount']) + num(m['thoughtsTokenCount']),
    cached_tokens: num(m['cachedContentTokenCount']),
  };
}

/** every streamed chunk carries cumulative usageMetadata; the last one wins */
export const generateContentStreamUsage = (): StreamUsageReader => sseUsageReader(['"usageMetadata"'], (event) => generateContentUsage(event));
