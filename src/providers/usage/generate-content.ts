import { num } from '../sse.js';
import type { StreamUsageReader, Usage } from '../types.js';
import { field, list, prop, sseUsageReader } from './sse-reader.js';

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

/** every streamed chunk carries cumulative usageMetadata; the last one wins. Reply text: each candidate's parts (thoughts too, billed as output) */
export const generateContentStreamUsage = (): StreamUsageReader =>
  sseUsageReader({
    usageMarkers: ['"usageMetadata"'],
    usage: (event) => generateContentUsage(event),
    textMarkers: ['"text"', '"functionCall"'],
    text: (event, out) => {
      for (const candidate of list(event, 'candidates')) {
        for (const part of list(field(candidate, 'content'), 'parts')) {
          out.add(prop(part, 'text'));
          const call = field(part, 'functionCall');
          if (call) out.add(JSON.stringify(call['args'] ?? {}));
        }
      }
    },
  });
