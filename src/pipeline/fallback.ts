import { GatewayError } from '../errors.js';
import type { HeaderList, ResponseMeta, ResponseSink } from '../http/types.js';

/** Vendor answers after which the next candidate is tried: rate limited, or failed on its side. */
const retryableStatus = (status: number): boolean => status === 429 || status >= 500;

/** The gateway's own summaries of an upstream that could not be reached or did not answer. */
const retryableError = (err: unknown): boolean => err instanceof GatewayError && (err.type === 'upstream_unavailable' || err.type === 'upstream_timeout');

/**
 * The caller's sink as one attempt of a call with a further candidate sees
 * it: a vendor 429 or 5xx, or an upstream that could not be reached, is held
 * back instead of written (`heldBack` tells the pipeline to try the next
 * candidate). Anything else, and everything once the status line is out,
 * passes through.
 */
export class FallbackSink implements ResponseSink {
  /** this attempt's failure was held back */
  heldBack = false;

  constructor(private readonly res: ResponseSink) {}

  get aborted(): boolean {
    return this.res.aborted;
  }
  get started(): boolean {
    return this.res.started;
  }
  get extraHeaders(): HeaderList {
    return this.res.extraHeaders;
  }
  get meta(): ResponseMeta {
    return this.res.meta;
  }

  send(status: number, headers: HeaderList, body: Uint8Array | string): void {
    if (!this.res.started && retryableStatus(status)) this.heldBack = true;
    else this.res.send(status, headers, body);
  }

  fail(err: unknown, extraHeaders?: HeaderList): void {
    if (!this.res.started && retryableError(err)) this.heldBack = true;
    else this.res.fail(err, extraHeaders);
  }

  start(status: number, headers: HeaderList): void {
    this.res.start(status, headers);
  }
  write(chunk: Uint8Array | string): boolean {
    return this.res.write(chunk);
  }
  onDrain(cb: () => void): void {
    this.res.onDrain(cb);
  }
  end(chunk?: Uint8Array | string): void {
    this.res.end(chunk);
  }
  onAbort(cb: () => void): void {
    this.res.onAbort(cb);
  }
  shortenDeadline(ms: number, message: string): void {
    this.res.shortenDeadline(ms, message);
  }
}
