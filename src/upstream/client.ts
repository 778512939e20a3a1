import { Agent, type Dispatcher } from 'undici';
import type { UpstreamRequest } from '../providers/types.js';
import type { PoolStats } from '../telemetry/metrics.js';

/** Receives an upstream response as it arrives. */
export interface UpstreamSink {
  onHeaders(status: number, headers: Record<string, string | string[] | undefined>): void;
  /** false asks for a pause; the caller resumes through UpstreamCall.resume */
  onData(chunk: Buffer): boolean;
  onEnd(): void;
  onError(err: Error): void;
}

export interface UpstreamCall {
  abort(reason?: Error): void;
  resume(): void;
}

export interface UpstreamOptions {
  connectionsPerOrigin: number;
  /** bound on the wait for response headers */
  headersTimeoutMs: number;
  connectTimeoutMs?: number;
}

export type UpstreamFailureKind = 'connect' | 'timeout' | 'reset' | 'aborted' | 'other';

/** Classifies an undici failure for the error table and metrics. */
export function failureKind(err: Error): UpstreamFailureKind {
  const code = (err as { code?: string }).code ?? '';
  if (code === 'UND_ERR_ABORTED' || err.name === 'AbortError') return 'aborted';
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') return 'timeout';
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EHOSTUNREACH') return 'connect';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE') return 'reset';
  return 'other';
}

/** A client abort needs no stack trace: one shared reason serves every call. */
const CLIENT_ABORT = Object.assign(new Error('aborted by the client'), { name: 'AbortError' });

const BEYOND_ASCII = /[\u0080-\uffff]/;

/**
 * Header values as the wire carries them. The front reads a caller's header
 * as UTF-8 and undici writes values as latin1, refusing a character past
 * U+00FF: a value beyond ASCII goes as a string of its UTF-8 bytes, so it
 * reaches the vendor as the bytes the caller sent (never a 502, nor é as one byte).
 */
function onTheWire(headers: Record<string, string>): Record<string, string> {
  let out: Record<string, string> | undefined;
  for (const k in headers) {
    const v = headers[k] as string;
    if (!BEYOND_ASCII.test(v)) continue;
    out ??= { ...headers };
    out[k] = Buffer.from(v, 'utf8').toString('latin1');
  }
  return out ?? headers;
}

/**
 * One upstream call: undici's handler and the caller's handle in one object,
 * so a request allocates no closures here. Aborting a finished call is a no-op.
 */
class Exchange implements Dispatcher.DispatchHandler, UpstreamCall {
  private controller: Dispatcher.DispatchController | undefined;
  private pendingAbort: Error | undefined;
  private done = false;

  constructor(private readonly sink: UpstreamSink) {}

  onRequestStart(c: Dispatcher.DispatchController): void {
    this.controller = c;
    if (this.pendingAbort) c.abort(this.pendingAbort);
  }

  onResponseStart(_c: Dispatcher.DispatchController, status: number, headers: Record<string, string | string[] | undefined>): void {
    this.sink.onHeaders(status, headers);
  }

  onResponseData(c: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.sink.onData(chunk)) c.pause();
  }

  onResponseEnd(): void {
    if (this.done) return;
    this.done = true;
    // a sink that fails on the finished reply (a translator choking on it) must still end the exchange
    try {
      this.sink.onEnd();
    } catch (err) {
      this.sink.onError(err instanceof Error ? err : new Error(String(err)));
    }
  }

  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    if (this.done) return;
    this.done = true;
    this.sink.onError(err);
  }

  abort(reason: Error = CLIENT_ABORT): void {
    if (this.done) return;
    if (this.controller) this.controller.abort(reason);
    else this.pendingAbort = reason;
  }

  resume(): void {
    this.controller?.resume();
  }
}

/** Pooled keep-alive connections to every upstream origin. */
export class Upstream {
  private readonly agent: Agent;

  constructor(opts: UpstreamOptions) {
    this.agent = new Agent({
      connections: opts.connectionsPerOrigin,
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 600_000,
      headersTimeout: opts.headersTimeoutMs,
      // streams are watched by the relay's own idle timer, which answers in-band
      bodyTimeout: 0,
      connect: { timeout: opts.connectTimeoutMs ?? 10_000 },
    });
  }

  dispatch(req: UpstreamRequest, sink: UpstreamSink): UpstreamCall {
    const exchange = new Exchange(sink);
    this.agent.dispatch({ origin: req.origin, path: req.path, method: req.method, headers: onTheWire(req.headers), body: req.body ?? null }, exchange);
    return exchange;
  }

  stats(): PoolStats[] {
    return Object.entries(this.agent.stats).map(([origin, s]) => {
      const st = s as { connected?: number; free?: number; pending?: number; running?: number };
      return { origin, connected: st.connected ?? 0, free: st.free ?? 0, pending: st.pending ?? 0, running: st.running ?? 0 };
    });
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
