import type { HeaderList, ResponseSink } from '../../http/types.js';
import { DelegatingSink } from '../../pipeline/delegating-sink.js';
import type { CachedReply } from '../../stores/cache.js';
import { StreamRecorder } from './reply.js';

const contentTypeOf = (headers: HeaderList): string => headers.find(([k]) => k === 'content-type')?.[1] ?? '';
const is2xx = (status: number) => status >= 200 && status < 300;

/**
 * The caller's sink, keeping a copy of a 2xx reply as it goes by: a whole
 * body, or a stream's events (up to `maxBytes`, past which nothing is kept).
 * With `hold`, the reply's last write (the whole body, or the stream's end)
 * waits for `release()`, so a reply is stored before the caller has it all.
 */
export class RecordingSink extends DelegatingSink {
  private whole: { status: number; contentType: string; body: Uint8Array } | undefined;
  private stream: { status: number; recorder: StreamRecorder } | undefined;
  private held: (() => void) | undefined;
  private released = false;

  constructor(
    inner: ResponseSink,
    private readonly maxBytes: number,
    private readonly hold: boolean,
  ) {
    super(inner);
  }

  override send(status: number, headers: HeaderList, body: Uint8Array | string): void {
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    if (is2xx(status) && bytes.byteLength <= this.maxBytes) this.whole = { status, contentType: contentTypeOf(headers), body: bytes };
    this.later(() => this.inner.send(status, headers, body));
  }

  override start(status: number, headers: HeaderList): void {
    if (is2xx(status)) this.stream = { status, recorder: new StreamRecorder(contentTypeOf(headers), this.maxBytes) };
    this.inner.start(status, headers);
  }

  override write(chunk: Uint8Array | string): boolean {
    this.stream?.recorder.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    return this.inner.write(chunk);
  }

  override end(chunk?: Uint8Array | string): void {
    if (chunk !== undefined) this.stream?.recorder.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    this.later(() => this.inner.end(chunk));
  }

  override fail(err: unknown, extraHeaders?: HeaderList): void {
    // a reply the gateway ended with an error is not one to keep
    this.whole = undefined;
    this.stream = undefined;
    this.inner.fail(err, extraHeaders);
  }

  /** The reply as it went by, with the call's usage; undefined when none was kept (not 2xx, too large, failed). */
  reply(usage: CachedReply['usage'] | undefined): CachedReply | undefined {
    if (this.whole) return { ...this.whole, ...(usage && { usage }) };
    return this.stream?.recorder.finish(this.stream.status, usage);
  }

  /** Writes what was held back; from here on nothing is held. */
  release(): void {
    this.released = true;
    const held = this.held;
    this.held = undefined;
    held?.();
  }

  private later(write: () => void): void {
    if (!this.hold || this.released) write();
    else this.held = write;
  }
}
