import type { HeaderList, ResponseMeta, ResponseSink } from '../http/types.js';

/**
 * A sink that passes every call to the sink it wraps: the base of the sinks
 * that see a reply on its way to the caller (a fallback attempt's, a skill's
 * reply tap), each overriding only what it changes.
 */
export class DelegatingSink implements ResponseSink {
  constructor(protected readonly inner: ResponseSink) {}

  get aborted(): boolean {
    return this.inner.aborted;
  }
  get started(): boolean {
    return this.inner.started;
  }
  get extraHeaders(): HeaderList {
    return this.inner.extraHeaders;
  }
  get meta(): ResponseMeta {
    return this.inner.meta;
  }

  send(status: number, headers: HeaderList, body: Uint8Array | string): void {
    this.inner.send(status, headers, body);
  }
  start(status: number, headers: HeaderList): void {
    this.inner.start(status, headers);
  }
  write(chunk: Uint8Array | string): boolean {
    return this.inner.write(chunk);
  }
  onDrain(cb: () => void): void {
    this.inner.onDrain(cb);
  }
  end(chunk?: Uint8Array | string): void {
    this.inner.end(chunk);
  }
  fail(err: unknown, extraHeaders?: HeaderList): void {
    this.inner.fail(err, extraHeaders);
  }
  onAbort(cb: () => void): void {
    this.inner.onAbort(cb);
  }
  shortenDeadline(ms: number, message: string): void {
    this.inner.shortenDeadline(ms, message);
  }
}
