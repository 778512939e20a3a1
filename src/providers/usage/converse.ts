import type { Message } from '@smithy/eventstream-codec';
import { toUtf8 } from '@smithy/util-utf8';
import { EventStreamScanner } from '../eventstream.js';
import { num } from '../sse.js';
import type { StreamUsageReader, Usage } from '../types.js';
import { DeferredText, deferredTextReader } from './deferred-text.js';
import { field, parseObject, prop } from './sse-reader.js';
import type { StreamedText } from './streamed-text.js';

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

/** the JSON payload of an event frame, decoded */
const payloadOf = (message: Message): Record<string, unknown> | undefined => parseObject(toUtf8(message.body));

/** ConverseStream: usage arrives in the `metadata` event frame, decoded as it passes; reply text in `contentBlockDelta` frames, kept unread until asked for. */
export function converseStreamUsage(): StreamUsageReader {
  let usage: Usage | undefined;
  const scanner = new EventStreamScanner(
    (headers) => headers.includes(METADATA),
    (message) => {
      if (message.headers[':event-type']?.value === 'metadata') usage = converseUsage(payloadOf(message)) ?? usage;
    },
  );
  const text = new DeferredText(
    (out) =>
      new EventStreamScanner(
        (headers) => headers.includes(CONTENT_BLOCK_DELTA),
        (message) => {
          if (message.headers[':event-type']?.value === 'contentBlockDelta') deltaText(payloadOf(message), out);
        },
      ),
  );
  return deferredTextReader(scanner, () => usage, text);
}
