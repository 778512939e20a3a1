/**
 * The gateway's own view of an HTTP exchange. server/ adapts uWebSockets.js to
 * these shapes; surfaces and the pipeline only ever see these.
 */
import type { GatewayError } from '../errors.js';
// pino's type itself and the leaf line-capture module, so http/ imports nothing that imports http/
import type { Logger } from 'pino';
import type { RequestLines } from '../telemetry/request-log.js';
import type { StageClock } from './stages.js';

export type HeaderList = Array<[string, string]>;

export interface GatewayRequest {
  /** x-gw-request-id: the caller's sanitized x-request-id, or one we assigned */
  readonly id: string;
  readonly method: string;
  /** raw path as received (percent-encoding kept) */
  readonly path: string;
  /** raw query string without the leading '?' */
  readonly query: string;
  /** lower-cased names; repeated headers joined with ', ' */
  readonly headers: Readonly<Record<string, string>>;
  /** route parameters, raw */
  readonly params: Readonly<Record<string, string>>;
  readonly body: Buffer;
  readonly stages: StageClock;
  /** this request's logger: every line carries its `req_id` */
  readonly log: Logger;
  /** the lines `log` has written, once it has been used */
  readonly logLines?: RequestLines;
}

/** Labels the pipeline attaches to an answer for metrics and access logs; accounting adds a relayed call's key, usage and cost. */
/** What the answer's handler learned about the call: labels for metrics, the access line and the row. */
export interface ResponseMeta {
  tenant?: string;
  provider?: string;
  model?: string;
  keyId?: string;
  upstreamStatus?: number;
  tokensIn?: number;
  tokensOut?: number;
  costUsd?: number;
  overheadMs?: number;
}

/** Where a handler writes its answer. Implementations apply backpressure. */
export interface ResponseSink {
  readonly aborted: boolean;
  /** true once the status line has been written */
  readonly started: boolean;
  /** headers added to whatever the handler answers (request id, stage durations, warnings) */
  readonly extraHeaders: HeaderList;
  readonly meta: ResponseMeta;
  /** a whole answer at once */
  send(status: number, headers: HeaderList, body: Uint8Array | string): void;
  /** begin a streamed answer */
  start(status: number, headers: HeaderList): void;
  /** false: the client is slow; wait for onDrain before writing more */
  write(chunk: Uint8Array | string): boolean;
  onDrain(cb: () => void): void;
  end(chunk?: Uint8Array | string): void;
  /**
   * Ends the exchange with a gateway error: the surface's envelope before the
   * status line, its in-band error event after it.
   */
  fail(err: unknown, extraHeaders?: HeaderList): void;
  /** client went away, or the gateway gave up on the request (deadline); called at once if that already happened */
  onAbort(cb: () => void): void;
}

/**
 * A surface's way of writing errors: the envelope before the status line, an
 * in-band error event once a stream is under way.
 */
export interface ErrorRenderer {
  renderError(err: GatewayError): { status: number; headers: HeaderList; body: string };
  /** bytes of one terminal error event in this surface's stream format */
  renderStreamError(err: GatewayError): Uint8Array | string;
}

/** Where a surface's SDKs put their key. `x-gw-key` is accepted on every route besides these. */
export type KeyCarrier = { header: string; bearer?: true } | { query: string };

/** A vendor-compatible surface as the pipeline sees it: its name, key carriers and error envelope. */
export interface Surface extends ErrorRenderer {
  readonly id: string;
  /** where this surface's SDKs carry a key, besides x-gw-key */
  readonly carriers: readonly KeyCarrier[];
  /** every optimization lever off on this surface, whatever the key's skills say (the parity relay) */
  readonly leversOff?: true;
}

export type Handler = (req: GatewayRequest, res: ResponseSink) => Promise<void> | void;

export interface Route {
  method: 'GET' | 'POST' | 'DELETE' | 'PUT' | 'PATCH';
  /** exact path, or a pattern with `:name` segments and a trailing `*` */
  path: string;
  /** which surface's envelope errors use, and its name in metrics */
  surface: ErrorRenderer & { readonly id: string };
  handler: Handler;
}
