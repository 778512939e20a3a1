import { SseScanner } from '../sse.js';
import type { StreamUsageReader, Usage } from '../types.js';
import { StreamedText } from './streamed-text.js';

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
 * An SSE stream's usage reader: usage from the events that report it, and the
 * reply text kept (bounded) for a count should none report it. Only lines
 * holding a marker are decoded, each parsed once.
 */
export function sseUsageReader(spec: SseReaderSpec): StreamUsageReader {
  let usage: Usage | undefined;
  const streamed = new StreamedText();
  const scanner = new SseScanner([...spec.usageMarkers, ...spec.textMarkers], (payload) => {
    let event: unknown;
    try {
      event = JSON.parse(payload);
    } catch {
      // a payload that is not JSON carries neither usage nor text
      return;
    }
    if (typeof event !== 'object' || event === null) return;
    usage = spec.usage(event as SseEvent, usage) ?? usage;
    spec.text(event as SseEvent, streamed);
  });
  return { push: (c) => scanner.push(c), usage: () => usage, streamedText: () => streamed.sample() };
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
