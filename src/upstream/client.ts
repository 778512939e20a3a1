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
    let controller: Dispatcher.DispatchController | undefined;
    let pendingAbort: Error | undefined;
    let done = false;
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        if (pendingAbort) c.abort(pendingAbort);
      },
      onResponseStart(c, status, headers) {
        sink.onHeaders(status, headers as Record<string, string | string[] | undefined>);
      },
      onResponseData(c, chunk) {
        if (!sink.onData(chunk)) c.pause();
      },
      onResponseEnd() {
        done = true;
        sink.onEnd();
      },
      onResponseError(_c, err) {
        if (done) return;
        done = true;
        sink.onError(err);
      },
    };
    this.agent.dispatch(
      { origin: req.origin, path: req.path, method: req.method, headers: req.headers, body: req.body ?? null },
      handler,
    );
    return {
      abort(reason) {
        const err = reason ?? Object.assign(new Error('aborted by the client'), { name: 'AbortError' });
        if (controller) controller.abort(err);
        else pendingAbort = err;
      },
      resume() {
        controller?.resume();
      },
    };
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
