import { toUtf8 } from '@smithy/util-utf8';
import { EventStreamScanner } from '../eventstream.js';
import { num } from '../sse.js';
import type { StreamUsageReader, Usage } from '../types.js';

/** Converse counts cache reads and writes apart from `inputTokens`; the prompt is all three. */
function usageOf(u: unknown): Usage | undefined {
  if (typeof u !== 'object' || u === null) return undefined;
  const r = u as Record<string, unknown>;
  const cached = num(r['cacheReadInputTokens']);
  return {
    input_tokens: num(r['inputTokens']) + cached + num(r['cacheWriteInputTokens']),
    output_tokens: num(r['outputTokens']),
    cached_tokens: cached,
  };
}

/** `usage` of a Converse reply. */
export function converseUsage(reply: unknown): Usage | undefined {
  if (typeof reply !== 'object' || reply === null) return undefined;
  return usageOf((reply as Record<string, unknown>)['usage']);
}

const METADATA = Buffer.from('metadata');

/** ConverseStream: usage arrives in the `metadata` event frame; only that frame is decoded. */
export function converseStreamUsage(): StreamUsageReader {
  let usage: Usage | undefined;
  const scanner = new EventStreamScanner(
    (headers) => headers.includes(METADATA),
    (message) => {
      if (message.headers[':event-type']?.value !== 'metadata') return;
      try {
        usage = converseUsage(JSON.parse(toUtf8(message.body))) ?? usage;
      } catch {
        // a metadata payload that is not JSON carries no usage
      }
    },
  );
  return { push: (c) => scanner.push(c), usage: () => usage };
}
