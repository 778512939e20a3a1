import type { CachedReply } from '../../stores/cache.js';
import { EventStreamScanner } from '../../providers/eventstream.js';

/**
 * A cached reply's bytes on the way in (a stream split into its events as it
 * is relayed), on the way out (replayed event by event), and as the text the
 * shadow mode compares.
 */

const isSse = (contentType: string) => contentType.includes('text/event-stream');
const isEventStream = (contentType: string) => contentType.includes('application/vnd.amazon.eventstream');

/** index just past the first blank line (LF LF or CRLF CRLF) at or after `from`, or -1 */
function eventEnd(buf: Buffer, from: number): number {
  const lf = buf.indexOf('\n\n', from);
  const crlf = buf.indexOf('\r\n\r\n', from);
  if (lf === -1) return crlf === -1 ? -1 : crlf + 4;
  return crlf === -1 || lf < crlf ? lf + 2 : crlf + 4;
}

/**
 * Collects a relayed stream as its events: server-sent events split at their
 * blank lines, AWS event-stream at frame boundaries, any other stream as the
 * chunks it came in. Gives up (and the reply is not stored) past `maxBytes`.
 */
export class StreamRecorder {
  private readonly events: Uint8Array[] = [];
  private carry: Buffer = Buffer.alloc(0);
  private bytes = 0;
  private over = false;

  constructor(
    private readonly contentType: string,
    private readonly maxBytes: number,
  ) {}

  push(chunk: Uint8Array): void {
    if (this.over) return;
    this.bytes += chunk.byteLength;
    if (this.bytes > this.maxBytes) {
      this.over = true;
      this.events.length = 0;
      this.carry = Buffer.alloc(0);
      return;
    }
    const piece = Buffer.from(chunk);
    if (!isSse(this.contentType) && !isEventStream(this.contentType)) {
      this.events.push(piece);
      return;
    }
    let buf = this.carry.length > 0 ? Buffer.concat([this.carry, piece]) : piece;
    for (let end = this.next(buf); end !== -1; end = this.next(buf)) {
      this.events.push(buf.subarray(0, end));
      buf = buf.subarray(end);
    }
    this.carry = buf;
  }

  private next(buf: Buffer): number {
    if (isSse(this.contentType)) return eventEnd(buf, 0);
    if (buf.length < 4) return -1;
    const total = buf.readUInt32BE(0);
    return total > 0 && buf.length >= total ? total : -1;
  }

  /** The stream as a reply to store, or undefined when it grew past the bound. */
  finish(status: number, usage?: CachedReply['usage']): CachedReply | undefined {
    if (this.over) return undefined;
    const events = this.carry.length > 0 ? [...this.events, this.carry] : this.events;
    return { status, contentType: this.contentType, events, ...(usage && { usage }) };
  }
}

/** Writes a stored stream's events in order, one write per event, waiting on each (a sink may apply backpressure). */
export async function replayEvents(reply: CachedReply, write: (event: Uint8Array) => void | Promise<void>): Promise<void> {
  for (const event of reply.events ?? []) await write(event);
}

/** The fields that carry a reply's content in every vendor shape, whole or streamed as deltas. */
const CONTENT_KEYS = new Set(['text', 'content', 'delta', 'arguments', 'partial_json']);

function collect(value: unknown, out: string[]): void {
  if (Array.isArray(value)) {
    for (const v of value) collect(v, out);
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  for (const [k, v] of Object.entries(value)) {
    if (typeof v === 'string') {
      if (CONTENT_KEYS.has(k)) out.push(v);
    } else collect(v, out);
  }
}

function parsed(text: string, out: string[]): void {
  try {
    collect(JSON.parse(text), out);
  } catch {
    out.push(text);
  }
}

/**
 * The reply's content text, normalised (Unicode form, whitespace): every
 * string under a content field (text, content, delta, arguments,
 * partial_json) of the JSON reply or of each streamed event, in order. Ids,
 * timestamps and usage are left out, so two replies with the same content
 * compare equal.
 */
export function replyText(reply: CachedReply): string {
  const out: string[] = [];
  const events = reply.events ?? [];
  if (reply.body !== undefined) parsed(Buffer.from(reply.body).toString('utf8'), out);
  else if (isSse(reply.contentType)) {
    for (const event of events) {
      for (const line of Buffer.from(event).toString('utf8').split(/\r?\n/)) {
        if (!line.startsWith('data:')) continue;
        const data = line.slice(5).trim();
        if (data !== '[DONE]') parsed(data, out);
      }
    }
  } else if (isEventStream(reply.contentType)) {
    const scanner = new EventStreamScanner(
      () => true,
      (m) => parsed(Buffer.from(m.body).toString('utf8'), out),
    );
    for (const event of events) scanner.push(Buffer.from(event));
  } else parsed(Buffer.concat(events).toString('utf8'), out);
  return out.join('').normalize('NFKC').replace(/\s+/g, ' ').trim();
}
