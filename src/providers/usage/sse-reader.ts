import { SseScanner } from '../sse.js';
import type { StreamUsageReader, Usage } from '../types.js';
import { DeferredText, deferredTextReader } from './deferred-text.js';
import type { StreamedText } from './streamed-text.js';

type SseEvent = Record<string, unknown>;

export interface SseReaderSpec {
  /** substrings of the `data:` lines that may carry usage */
  usageMarkers: readonly string[];
  /** usage out of one parsed event, given what was read so far */
  usage(event: SseEvent, acc: Usage | undefined): Usage | undefined;
  /** substrings of the `data:` lines that carry reply text */
  textMarkers: readonly string[];
  /** hands the reply text of one parsed event to `out` */
  text(event: SseEvent, out: StreamedText): void;
}

/**
 * An SSE stream's usage reader: usage from the events that report it, read
 * as they pass (only lines holding a usage marker are decoded), and the reply
 * text kept unread (bounded) for a count should none report it.
 */
export function sseUsageReader(spec: SseReaderSpec): StreamUsageReader {
  let usage: Usage | undefined;
  const scanner = new SseScanner(spec.usageMarkers, (payload) => {
    const event = parseObject(payload);
    if (event) usage = spec.usage(event, usage) ?? usage;
  });
  const text = new DeferredText(
    (out) =>
      new SseScanner(spec.textMarkers, (payload) => {
        const event = parseObject(payload);
        if (event) spec.text(event, out);
      }),
  );
  return deferredTextReader(scanner, () => usage, text);
}

/** `payload` parsed, if it is a JSON object: anything else carries neither usage nor text */
export function parseObject(payload: string): SseEvent | undefined {
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return undefined;
  }
  return typeof value === 'object' && value !== null ? (value as SseEvent) : undefined;
}

/** the value at `key` of `v`, if `v` is an object */
export const prop = (v: unknown, key: string): unknown => (typeof v === 'object' && v !== null ? (v as SseEvent)[key] : undefined);

/** the object at `key` of `v`, if it is one */
export const field = (v: unknown, key: string): SseEvent | undefined => {
  const f = prop(v, key);
  return typeof f === 'object' && f !== null ? (f as SseEvent) : undefined;
};

/** the array at `key` of `v`, or none */
export const list = (v: unknown, key: string): unknown[] => {
  const f = prop(v, key);
  return Array.isArray(f) ? f : [];
};
