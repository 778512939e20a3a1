import { randomUUID } from 'node:crypto';
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { GatewayError } from '../errors.js';
import { StageClock } from '../http/stages.js';
import type { ErrorRenderer, GatewayRequest, Route } from '../http/types.js';
import type { AccessLog } from '../telemetry/access-log.js';
import type { LoadMonitor } from '../telemetry/load-monitor.js';
import type { Logger } from '../telemetry/log.js';
import { throttledWarn } from '../telemetry/throttled-log.js';
import { capturedLines, requestLogger, type RequestLines } from '../telemetry/request-log.js';
import type { Metrics } from '../telemetry/metrics.js';
import { readBody, type Ingress } from './ingress.js';
import { Router } from './router.js';
import { renderedOnce } from './shed-answers.js';
import { UwsSink, type SinkHooks } from './sink.js';
import { closeApp, listenOn, portRefusal, type Uws } from './uws.js';

export interface FrontOptions {
  uws: Uws;
  routes: Route[];
  /** envelope for answers that match no route */
  defaultSurface: ErrorRenderer & { readonly id: string };
  maxBodyBytes: number;
  requestDeadlineMs: number;
  log: Logger;
  /** one line per answered request */
  accessLog: AccessLog;
  metrics: Metrics;
  /** transport-side shedding, decided before a body is read */
  ingress: Ingress;
  /** counts what is in flight and what completes */
  monitor: LoadMonitor;
}

export interface Front {
  /** binds the port exclusively unless `share` (a replica joining its siblings); rejects naming the port when it is held */
  listen(host: string, port: number, share?: boolean): Promise<number>;
  /** stops accepting; in-flight requests go on */
  stopListening(): void;
  /** closes every connection, idle keep-alive ones included (after in-flight requests are done) */
  closeConnections(): void;
  readonly inFlight: number;
}

/** The request's deadline passed before its answer began: 504, and whatever waits on it stops. */
function giveUp(sink: UwsSink, stages: StageClock, message: string): void {
  if (sink.started || sink.finished) return;
  // answer first: cancelling ends the running stage, and the header must name it as running
  sink.fail(new GatewayError('gateway_timeout', message), [['x-gw-stage-durations', stages.header()]]);
  sink.cancel();
}

/** Request ids we reflect must be safe in a header and a log line. */
const SAFE_ID = /^[A-Za-z0-9._:/+=@-]{1,128}$/;
/** uWS itself never dispatches such requests; kept for the JS fallback's parser. */
const hasControlBytes = (v: string): boolean => v.includes('\r') || v.includes('\n') || v.includes('\0');

/**
 * The uWebSockets.js front: refuses ambiguous framing, reads bodies within the
 * limit, runs the route's handler and enforces the request deadline. It is the
 * only module that holds a uWS response object.
 */
export function createFront(opts: FrontOptions): Front {
  const { uws, log, accessLog, metrics, ingress, monitor } = opts;
  const router = new Router(opts.routes);
  const app: TemplatedApp = uws.App();
  let listenSocket: us_listen_socket | undefined;
  let inFlight = 0;
  const warnShed = throttledWarn(log, 'requests shed: overloaded');

  /**
   * One request: the sink's hooks and the handler's GatewayRequest in one
   * object, so admission allocates no closures and no lookup table.
   */
  class Exchange implements GatewayRequest, SinkHooks {
    query = '';
    params: Readonly<Record<string, string>> = NO_PARAMS;
    body: Buffer = EMPTY;
    deadline: NodeJS.Timeout | undefined;
    /** body bytes counted in flight for this request */
    bodyBytes = 0;
    private childLog: Logger | undefined;

    constructor(
      readonly id: string,
      readonly method: string,
      readonly rawMethod: string,
      readonly path: string,
      readonly headers: Readonly<Record<string, string>>,
      readonly stages: StageClock,
      readonly surface: string,
    ) {}

    get log(): Logger {
      return (this.childLog ??= requestLogger(log, this.id));
    }

    get logLines(): RequestLines | undefined {
      return this.childLog && capturedLines(this.childLog);
    }

    onStart(): void {
      clearTimeout(this.deadline);
    }

    /** every answered error, at its type's level (errors.ts), with its cause (an unexpected fault's stack, the upstream's failure) */
    onError(err: GatewayError): void {
      // shedding comes when the replica has least to spare: one line an interval, with the count held back (each shed has its access line and gw_shed_total)
      if (err.type === 'overloaded') return warnShed({ req_id: this.id, status: err.status, reason: err.message });
      const fields = err.cause === undefined ? { type: err.type, status: err.status } : { type: err.type, status: err.status, err: err.cause };
      this.log[err.spec.level](fields, err.message);
    }

    stageDurations(): string {
      return this.stages.header();
    }

    shortenDeadline(sink: UwsSink, ms: number, message: string): void {
      if (ms >= opts.requestDeadlineMs - this.stages.elapsedMs) return;
      clearTimeout(this.deadline);
      this.deadline = setTimeout(() => giveUp(sink, this.stages, message), ms);
    }

    onFinish(sink: UwsSink): void {
      clearTimeout(this.deadline);
      inFlight--;
      monitor.leave(this.bodyBytes);
      const ms = this.stages.elapsedMs;
      const status = sink.aborted && !sink.started ? 499 : sink.status;
      metrics.countAnswer(this.surface, status, sink.meta.provider ?? 'none', ms / 1000);
      accessLog.write({
        req_id: this.id,
        method: this.rawMethod,
        path: this.path,
        status,
        ms: Math.round(ms * 100) / 100,
        meta: sink.meta,
        aborted: sink.aborted,
      });
    }
  }

  const refuse = (sink: UwsSink, reason: string, message: string) => {
    metrics.refusedFraming.inc({ reason });
    answerThenClose(sink, new GatewayError('request_error', message));
  };

  const run = (exchange: Exchange, sink: UwsSink, handler: Route['handler']) => {
    try {
      const out = handler(exchange, sink);
      if (out instanceof Promise) out.catch((err: unknown) => sink.fail(err));
    } catch (err) {
      sink.fail(err);
    }
  };

  app.any('/*', (res: HttpResponse, req: HttpRequest) => {
    const stages = new StageClock();
    const rawMethod = req.getMethod().toUpperCase();
    const path = req.getUrl();
    const query = req.getQuery() ?? '';
    const headers: Record<string, string> = {};
    let contentLengths = 0;
    let badHeader = false;
    req.forEach((k, v) => {
      if (k === 'content-length') contentLengths++;
      if (hasControlBytes(v)) badHeader = true;
      const prev = headers[k];
      headers[k] = prev === undefined ? v : `${prev}, ${v}`;
    });
    const callerId = headers['x-request-id'];
    const id = callerId !== undefined && SAFE_ID.test(callerId) ? callerId : randomUUID();
    const headOnly = rawMethod === 'HEAD';
    const method = headOnly ? 'GET' : rawMethod;
    const match = router.match(method, path);
    const renderer = match.kind === 'found' ? match.route.surface : opts.defaultSurface;
    const exchange = new Exchange(id, method, rawMethod, path, headers, stages, renderer.id);
    exchange.query = query;
    const sink = new UwsSink(res, id, headOnly, exchange, renderer);
    inFlight++;
    monitor.enter(0);
    res.onAborted(() => sink.markAborted());

    const te = headers['transfer-encoding'];
    if (contentLengths > 1) return refuse(sink, 'duplicate_content_length', 'more than one Content-Length');
    if (te !== undefined && contentLengths > 0) return refuse(sink, 'content_length_with_transfer_encoding', 'Content-Length beside Transfer-Encoding');
    if (te !== undefined && te.toLowerCase() !== 'chunked') return refuse(sink, 'transfer_encoding', 'unsupported Transfer-Encoding');
    if (badHeader) return refuse(sink, 'control_bytes', 'header value with CR, LF or NUL');

    if (match.kind === 'not_found') return sink.fail(new GatewayError('not_found', `no route for ${rawMethod} ${path.slice(0, 200).replace(/[^\x20-\x7e]/g, '?')}`));
    if (match.kind === 'method_not_allowed') {
      return sink.fail(new GatewayError('method_not_allowed', `method ${rawMethod} not allowed`, { headers: [['allow', match.allowed.join(', ')]] }));
    }
    exchange.params = match.params;
    const handler = match.route.handler;

    const declared = headers['content-length'];
    // 0: no body; -1: chunked
    const length = declared === undefined ? (te === undefined ? 0 : -1) : Number(declared);
    if (declared !== undefined && !/^\d+$/.test(declared)) return refuse(sink, 'content_length', 'malformed Content-Length');
    if (length > opts.maxBodyBytes) return tooLarge(sink, opts.maxBodyBytes);
    if (length !== 0) {
      const refusal = ingress.refuse(length);
      // the body is left unread (when the connection closes: shed)
      if (refusal) return shed(sink, refusal, length > 0);
    }

    exchange.deadline = setTimeout(() => giveUp(sink, stages, 'request deadline exceeded before a response started; safe to retry'), opts.requestDeadlineMs);
    if (length === 0) return run(exchange, sink, handler);
    if (length > 0) {
      exchange.bodyBytes = length;
      monitor.grow(length);
    }
    readBody(res, length, opts.maxBodyBytes, {
      body(body) {
        if (sink.finished) return;
        exchange.body = body;
        run(exchange, sink, handler);
      },
      tooLarge: () => tooLarge(sink, opts.maxBodyBytes),
      grew(n) {
        exchange.bodyBytes += n;
        return ingress.grew(n);
      },
      refused: (err) => shed(sink, err),
    });
  });


  return {
    listen(host, port, share = false) {
      return new Promise((resolve, reject) => {
        listenOn(app, host, port, share, (socket) => {
          if (!socket) return reject(new Error(portRefusal(host, port)));
          listenSocket = socket;
          resolve(uws.us_socket_local_port(socket));
        });
      });
    },
    stopListening() {
      if (listenSocket) uws.us_listen_socket_close(listenSocket);
      listenSocket = undefined;
    },
    closeConnections() {
      closeApp(app);
    },
    get inFlight() {
      return inFlight;
    },
  };
}

const EMPTY = Buffer.alloc(0);
const NO_PARAMS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * Ends the exchange with `err` and closes the connection. This uWS build keeps
 * parsing bytes that follow in the same read and dispatches them as the next
 * request once the current answer has ended, and it ignores the close flag of
 * an answer written inside its parse loop. Answering on the next turn instead
 * means a pipelined (smuggled) request finds this answer still pending, which
 * makes uWS drop the connection without dispatching it; with nothing pipelined
 * the 400/413 goes out and the connection closes.
 */
function answerThenClose(sink: UwsSink, err: GatewayError): void {
  sink.closeConnection = true;
  setImmediate(() => sink.fail(err));
}

/** A body past GW_MAX_BODY_BYTES, declared or as it arrives: 413, and the connection closes. */
function tooLarge(sink: UwsSink, maxBytes: number): void {
  answerThenClose(sink, new GatewayError('payload_too_large', `request body exceeds ${maxBytes} bytes`));
}

/**
 * A transport shed: its surface's envelope rendered once for every shed of its
 * reason, then answered and closed. A body framed by its Content-Length is
 * answered at once: deferred to the next turn it waited behind every other
 * socket the turn read (p99 6-16 ms at the gateway under twice the ingress
 * budget, against 0.1-0.2 ms). The declared length frames the body, so uWS
 * skips its bytes unparsed; the connection closes after the answer unless the
 * whole body and a next request came with it, and that request is then served
 * as the caller's next. A chunked body's framing is uWS's own reading: its
 * shed keeps the deferred answer, which drops whatever follows.
 */
function shed(sink: UwsSink, err: GatewayError, framedByLength = false): void {
  sink.renderer = renderedOnce(sink.renderer);
  if (!framedByLength) return answerThenClose(sink, err);
  sink.closeConnection = true;
  sink.fail(err);
}
