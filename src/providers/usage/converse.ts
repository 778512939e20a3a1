import { toUtf8 } from '@smithy/util-utf8';
import { EventStreamScanner } from '../eventstream.js';
import { num } from '../sse.js';
import type { StreamUsageReader, Usage } from '../types.js';
import { field, prop } from './sse-reader.js';
import { StreamedText } from './streamed-text.js';

/** Converse counts cache reads and writes apart from `inputTokens`; the prompt is all three. */
function usageOf(u: unknown): Usage | undefined {
  if (typeof u !== 'object' || u === null) return undefined;
  const r = u as Record<string, unknown>;
  const cached = num(r['cacheReadInputTokens']);
  const written = num(r['cacheWriteInputTokens']);
  return {
    input_tokens: num(r['inputTokens']) + cached + written,
    output_tokens: num(r['outputTokens']),
    cached_tokens: cached,
    cache_write_tokens: written,
  };
}

/** `usage` of a Converse reply. */
export function converseUsage(reply: unknown): Usage | undefined {
  if (typeof reply !== 'object' || reply === null) return undefined;
  return usageOf((reply as Record<string, unknown>)['usage']);
}

const METADATA = Buffer.from('metadata');
const CONTENT_BLOCK_DELTA = Buffer.from('contentBlockDelta');

/** reply text of a `contentBlockDelta` payload: text, reasoning, tool-input JSON */
function deltaText(payload: unknown, out: StreamedText): void {
  const delta = field(payload, 'delta');
  out.add(prop(delta, 'text'));
  out.add(prop(field(delta, 'reasoningContent'), 'text'));
  out.add(prop(field(delta, 'toolUse'), 'input'));
}

/** ConverseStream: usage arrives in the `metadata` event frame, reply text in `contentBlockDelta` frames; only those are decoded. */
export function converseStreamUsage(): StreamUsageReader {
  let usage: Usage | undefined;
  const streamed = new StreamedText();
  const scanner = new EventStreamScanner(
    (headers) => headers.includes(METADATA) || headers.includes(CONTENT_BLOCK_DELTA),
    (message) => {
      const type = message.headers[':event-type']?.value;
      if (type !== 'metadata' && type !== 'contentBlockDelta') return;
      let payload: unknown;
      try {
        payload = JSON.parse(toUtf8(message.body));
      } catch {
        // a payload that is not JSON carries neither usage nor text
        return;
      }
      if (type === 'metadata') usage = converseUsage(payload) ?? usage;
      else deltaText(payload, streamed);
    },
  );
  return { push: (c) => scanner.push(c), usage: () => usage, streamedText: () => streamed.sample() };
}
