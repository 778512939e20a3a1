import { STATUS_CODES } from 'node:http';
import type { HttpResponse } from 'uWebSockets.js';
import { asGatewayError, type GatewayError } from '../errors.js';
import type { ErrorRenderer, HeaderList, ResponseMeta, ResponseSink } from '../http/types.js';

/** Headers uWS writes itself, or that describe a hop rather than the message. */
const NEVER_COPIED = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'date', 'upgrade', 'trailer', 'te', 'proxy-connection']);
const STATUS_LINES = new Map<number, string>();
const statusLine = (status: number): string => {
  let line = STATUS_LINES.get(status);
  if (line === undefined) {
    line = `${status} ${STATUS_CODES[status] ?? 'Unknown'}`;
    STATUS_LINES.set(status, line);
  }
  return line;
};
const BEYOND_ASCII = /[\u0080-\uffff]/;
const BEYOND_LATIN1 = /[\u0100-\uffff]/;
/**
 * A header value as the bytes to write. undici reads a vendor's header bytes
 * one character each (latin1), and uWS would write a string as UTF-8: such a
 * value goes back out as the bytes it was read from. A character past U+00FF
 * was never read from the wire, so that value is the gateway's own text, in UTF-8.
 */
const headerValue = (v: string): string | Buffer => (BEYOND_ASCII.test(v) && !BEYOND_LATIN1.test(v) ? Buffer.from(v, 'latin1') : v);
/** Bodies above this are written with tryEnd/onWritable instead of one end(). */
const TRY_END_THRESHOLD = 64 * 1024;

export interface SinkHooks {
  /** called once, when the answer is complete or the client is gone */
  onFinish(sink: UwsSink): void;
  onStart(sink: UwsSink): void;
  /** called once, with the error the answer renders: the one place an answered error is logged */
  onError(err: GatewayError): void;
  /** the request's stage timings so far, as `x-gw-stage-durations` gives them */
  stageDurations(): string;
  /** the request's deadline moves to `ms` from now, if sooner (ResponseSink.shortenDeadline) */
  shortenDeadline(sink: UwsSink, ms: number, message: string): void;
}

/** ResponseSink over a uWS HttpResponse: corks every write and honours backpressure. */
export class UwsSink implements ResponseSink {
  aborted = false;
  private cancelled = false;
  started = false;
  finished = false;
  status = 0;
  readonly extraHeaders: HeaderList;
  readonly meta: ResponseMeta = {};
  /** set when the request must end with the connection closed (framing refusals) */
  closeConnection = false;
  private drainCb: (() => void) | undefined;
  private writableHooked = false;
  private readonly abortCbs: Array<() => void> = [];

  constructor(
    private readonly res: HttpResponse,
    requestId: string,
    private readonly headOnly: boolean,
    private readonly hooks: SinkHooks,
    public renderer: ErrorRenderer,
  ) {
    this.extraHeaders = [['x-gw-request-id', requestId]];
  }

  /** wired to res.onAborted by the front */
  markAborted(): void {
    if (this.aborted || this.finished) return;
    this.aborted = true;
    this.cancel();
    this.finish();
  }

  /** the gateway gave up on the request (deadline): whoever waits on the client stops too, now or when they start waiting */
  cancel(): void {
    this.cancelled = true;
    for (const cb of this.abortCbs.splice(0)) cb();
  }

  onAbort(cb: () => void): void {
    if (this.aborted || this.cancelled) cb();
    else this.abortCbs.push(cb);
  }

  shortenDeadline(ms: number, message: string): void {
    if (this.started || this.finished) return;
    this.hooks.shortenDeadline(this, ms, message);
  }

  send(status: number, headers: HeaderList, body: Uint8Array | string): void {
    if (this.started || this.aborted) return;
    this.begin(status);
    const res = this.res;
    if (typeof body !== 'string' && body.byteLength > TRY_END_THRESHOLD && !this.headOnly && !this.closeConnection) {
      res.cork(() => {
        this.writeHead(status, headers);
        this.sendLarge(body);
      });
      return;
    }
    res.cork(() => {
      this.writeHead(status, headers);
      if (this.headOnly) this.endHead(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
      else res.end(body, this.closeConnection);
    });
    this.finish();
  }

  start(status: number, headers: HeaderList): void {
    if (this.started || this.aborted) return;
    this.begin(status);
    this.res.cork(() => {
      this.writeHead(status, headers);
      // flushes the status line and headers now, so the client sees the stream open
      if (!this.headOnly) this.res.write('');
    });
  }

  write(chunk: Uint8Array | string): boolean {
    if (this.finished || this.headOnly) return true;
    let ok = true;
    this.res.cork(() => {
      ok = this.res.write(chunk);
    });
    return ok;
  }

  onDrain(cb: () => void): void {
    this.drainCb = cb;
    if (this.writableHooked) return;
    this.writableHooked = true;
    this.res.onWritable(() => {
      const pending = this.drainCb;
      this.drainCb = undefined;
      pending?.();
      return true;
    });
  }

  end(chunk?: Uint8Array | string): void {
    if (this.finished) return;
    this.res.cork(() => {
      if (this.headOnly) this.endHead(undefined);
      else this.res.end(chunk, this.closeConnection);
    });
    this.finish();
  }

  /** The one place errors are written: the surface's envelope, or its in-band event mid-stream. */
  fail(error: unknown, extraHeaders: HeaderList = []): void {
    if (this.finished) return;
    const err: GatewayError = asGatewayError(error);
    this.hooks.onError(err);
    if (this.started) {
      this.end(this.renderer.renderStreamError(err));
      return;
    }
    const { status, headers, body } = this.renderer.renderError(err);
    const all: HeaderList = [['content-type', 'application/json'], ...headers, ...extraHeaders];
    if (err.carriesHeader) all.push(['x-gw-error', err.type]);
    const retry = err.retryAfterS;
    if (retry !== undefined) all.push(['retry-after', String(retry)]);
    if (err.options.headers) all.push(...err.options.headers);
    // whichever store was waited on, a store_timeout names the stages and the running one (docs/errors.md, Rules)
    if (err.type === 'store_timeout' && !all.some(([k]) => k === 'x-gw-stage-durations')) all.push(['x-gw-stage-durations', this.hooks.stageDurations()]);
    this.send(status, all, body);
  }

  private begin(status: number): void {
    this.started = true;
    this.status = status;
    this.hooks.onStart(this);
  }

  private writeHead(status: number, headers: HeaderList): void {
    const res = this.res;
    res.writeStatus(statusLine(status));
    for (const [k, v] of headers) if (!NEVER_COPIED.has(k)) res.writeHeader(k, headerValue(v));
    for (const [k, v] of this.extraHeaders) res.writeHeader(k, v);
  }

  /**
   * Ends a HEAD answer. In this uWS build endWithoutBody(n) with n > 0 never
   * completes the answer and an explicit `undefined` leaves it unanswered; only
   * endWithoutBody() and endWithoutBody(0, close) work. So the GET length rides
   * as a plain header, and a refusal (which must close) reports 0.
   */
  private endHead(length: number | undefined): void {
    if (this.closeConnection) {
      this.res.endWithoutBody(0, true);
      return;
    }
    if (length !== undefined) this.res.writeHeader('content-length', String(length));
    this.res.endWithoutBody();
  }

  private sendLarge(body: Uint8Array): void {
    const res = this.res;
    const total = body.byteLength;
    const base = res.getWriteOffset();
    const [, done] = res.tryEnd(body, total);
    if (done) {
      this.finish();
      return;
    }
    res.onWritable((offset) => {
      const [ok, finished] = res.tryEnd(body.subarray(offset - base), total);
      if (finished) this.finish();
      return ok;
    });
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.hooks.onFinish(this);
  }
}
