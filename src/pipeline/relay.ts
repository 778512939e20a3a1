import { GatewayError } from '../errors.js';
import type { GatewayRequest, HeaderList, ResponseSink } from '../http/types.js';
import type { ProviderAdapter } from '../providers/adapter.js';
import { framingFor, type Framing } from '../providers/framing.js';
import type { StreamedTextSample, StreamUsageReader, UpstreamRequest, Usage } from '../providers/types.js';
import type { Metrics } from '../telemetry/metrics.js';
import type { ReplyTransform, StreamTransform } from '../translate/types.js';
import { failureKind, type Upstream, type UpstreamCall, type UpstreamSink } from '../upstream/client.js';
import type { OriginHealth } from '../upstream/health.js';
import { OriginFull, type OriginSlot, type UpstreamInflight } from '../upstream/inflight.js';
import { relayResponseHeaders } from './forward-headers.js';

export interface RelayLimits {
  streamIdleMs: number;
  streamDeadlineMs: number;
  /** GW_MAX_REPLY_BYTES: a buffered (non-streamed) reply past this is cancelled and answered 502 */
  maxReplyBytes: number;
}

export interface RelayOutcome {
  status: number;
  usage: Usage | undefined;
  upstreamMs: number;
  /** the gateway's own time: before dispatch, and for a whole reply between its last byte and the answer */
  overheadMs: number | undefined;
  /** false when the call never went upstream (the request was answered or abandoned first) */
  dispatched: boolean;
  streamed: boolean;
  /** a stream that ended without usage: the reply text it carried, for the gateway's own count */
  streamedText?: StreamedTextSample;
  /** set when the gateway, not the vendor, ended the exchange */
  error?: GatewayError;
  /** a whole 2xx JSON reply as the vendor sent it, parsed (before any translation); absent past MAX_KEPT_REPLY_BYTES */
  replyJson?: unknown;
}

/** a parsed reply larger than this is not kept for accounting's measures (tool-call fidelity) */
const MAX_KEPT_REPLY_BYTES = 1024 * 1024;

/** an unfinished event held back past this size is forwarded as it is (framing gives way to memory) */
const MAX_HELD_EVENT_BYTES = 1024 * 1024;

const STREAM_TYPES = ['text/event-stream', 'application/vnd.amazon.eventstream'];
const isStream = (contentType: string | string[] | undefined): boolean =>
  typeof contentType === 'string' && STREAM_TYPES.some((t) => contentType.startsWith(t));

/**
 * Sends one request upstream and relays the answer: a stream chunk by chunk
 * with backpressure and idle/deadline timers, anything else buffered so a 2xx
 * that does not parse as JSON becomes upstream_truncated instead of a 200.
 * Vendor errors are relayed as the vendor sent them. A `transform` (a
 * translated call) rewrites the reply into the caller's wire format; without
 * one the bytes pass untouched.
 */
export function relay(
  deps: RelayDeps,
  req: GatewayRequest,
  res: ResponseSink,
  provider: ProviderAdapter,
  request: UpstreamRequest,
  reply: ReplyOptions,
  held: OriginSlot | undefined,
): Promise<RelayOutcome> {
  return new Promise((resolve) => new RelayExchange(deps, req, res, provider, reply, resolve).start(request, held));
}

/** How one call's reply is handled. */
export interface ReplyOptions {
  /** added to the vendor's headers (x-gw-served-by) */
  gatewayHeaders: HeaderList;
  /** a translated call: rewrites the reply into the caller's format */
  transform?: ReplyTransform;
  /**
   * The route relays arbitrary vendor paths whose 2xx replies may be audio or
   * text: only a reply that says it is JSON is held to parse as JSON. Every
   * other route's 2xx reply must be JSON, or it is upstream_truncated.
   */
  opaqueReplies?: boolean;
}

export interface RelayDeps {
  upstream: Upstream;
  metrics: Metrics;
  limits: RelayLimits;
  health: OriginHealth;
  /** requests in flight per origin: a call to a full one is shed */
  inflight: UpstreamInflight;
}

/** One relayed call; its methods are the upstream sink, so a call allocates no closures. */
class RelayExchange implements UpstreamSink {
  private readonly started = performance.now();
  private status = 0;
  private upstreamMs = 0;
  /** the request's age when it was handed to the upstream */
  private readonly preDispatchMs: number;
  private overheadMs: number | undefined;
  private mode: 'pending' | 'stream' | 'buffer' = 'pending';
  private parts: Buffer[] = [];
  private size = 0;
  /** an untranslated stream's usage reader (a translator reads usage in its own pass) */
  private reader: StreamUsageReader | undefined;
  private idle: NodeJS.Timeout | undefined;
  private lastChunkAt = 0;
  private deadline: NodeJS.Timeout | undefined;
  private settled = false;
  private headers: HeaderList = [];
  private upstreamHeaders: Record<string, string | string[] | undefined> = {};
  private translator: StreamTransform | undefined;
  private framing: Framing | undefined;
  /** an unfinished event, held until the rest of it arrives */
  private held: Buffer | undefined;
  private call: UpstreamCall | undefined;
  private dispatched = false;
  private origin = '';
  /** the call's place at its origin, given back when the exchange settles */
  private slot: OriginSlot | undefined;

  constructor(
    private readonly deps: RelayDeps,
    private readonly req: GatewayRequest,
    private readonly res: ResponseSink,
    private readonly provider: ProviderAdapter,
    private readonly reply: ReplyOptions,
    private readonly resolve: (o: RelayOutcome) => void,
  ) {
    this.preDispatchMs = req.stages.elapsedMs;
  }

  /** `held`: the slot taken before the skills (src/pipeline/room.ts), the call's own if it goes to that origin, else given back first */
  start(request: UpstreamRequest, held: OriginSlot | undefined): void {
    if (held?.origin === request.origin) this.slot = held;
    else held?.release();
    // answered already (the request deadline passed while a stage waited) or the client left: the vendor is not called
    if (this.res.started || this.res.aborted) {
      this.settle(this.res.aborted ? 499 : 504);
      return;
    }
    const slot = this.slot ?? this.deps.inflight.enter(request.origin);
    if (slot instanceof OriginFull) {
      this.res.fail(slot);
      this.settle(slot.status, slot);
      return;
    }
    this.slot = slot;
    this.dispatched = true;
    this.origin = request.origin;
    this.req.stages.begin(`upstream_${this.provider.id}`);
    const call = this.deps.upstream.dispatch(request, this);
    this.call = call;
    // the client left, or the gateway gave up on the request (deadline)
    this.res.onAbort(() => call.abort());
  }

  onHeaders(status: number, headers: Record<string, string | string[] | undefined>): void {
    this.deps.health.succeeded(this.origin);
    this.status = status;
    this.upstreamMs = performance.now() - this.started;
    this.deps.metrics.observeUpstreamLatency(this.provider.id, this.upstreamMs / 1000);
    this.headers = relayResponseHeaders(headers);
    if (status >= 200 && status < 300 && isStream(headers['content-type'])) {
      this.mode = 'stream';
      const { transform } = this.reply;
      // a translated stream is read once, by its translator, which also reads its usage
      if (transform) {
        this.translator = transform.stream();
        retype(this.headers, transform.streamContentType);
      } else {
        this.reader = this.provider.streamUsage();
        this.framing = framingFor(String(headers['content-type']));
      }
      this.res.start(status, this.withGatewayHeaders());
      this.overheadMs = this.preDispatchMs;
      const { streamIdleMs, streamDeadlineMs } = this.deps.limits;
      this.lastChunkAt = performance.now();
      this.idle = setTimeout(() => this.checkIdle(), streamIdleMs);
      const left = Math.max(0, streamDeadlineMs - this.req.stages.elapsedMs);
      this.deadline = setTimeout(() => this.timeOut('deadline', `stream open longer than ${streamDeadlineMs / 1000} s`), left);
    } else {
      this.mode = 'buffer';
      this.upstreamHeaders = headers;
      // a declared length past the cap is refused before a byte of it is buffered
      if (Number(headers['content-length'] ?? 0) > this.deps.limits.maxReplyBytes) this.overCap();
    }
  }

  onData(chunk: Buffer): boolean {
    if (this.mode !== 'stream') {
      if (this.settled) return true;
      this.size += chunk.length;
      if (this.size > this.deps.limits.maxReplyBytes) this.overCap();
      else this.parts.push(chunk);
      return true;
    }
    this.lastChunkAt = performance.now();
    let out;
    if (this.translator) out = this.translator.push(chunk);
    else {
      this.reader?.push(chunk);
      out = this.wholeEvents(chunk);
    }
    if (out === undefined || this.res.write(out)) return true;
    this.res.onDrain(() => this.call?.resume());
    return false;
  }

  onEnd(): void {
    if (this.settled) return;
    if (this.mode === 'stream') {
      // a clean end passes whatever the vendor sent last, even an unterminated event (clients discard it)
      this.res.end(this.translator ? this.translator.end() : this.held);
      this.settle(this.status);
      return;
    }
    const lastByteAt = performance.now();
    const { parts, size, status } = this;
    const { transform } = this.reply;
    let body = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, size);
    let usage: Usage | undefined;
    let replyJson: unknown;
    if (status >= 200 && status < 300 && (!this.reply.opaqueReplies || isJsonOrUntyped(this.upstreamHeaders['content-type']))) {
      let json: unknown;
      try {
        json = JSON.parse(body.toString('utf8'));
      } catch {
        const err = new GatewayError('upstream_truncated', 'the provider answered 2xx with a body that is not valid JSON; not retried, since a retry would be paid twice');
        this.deps.metrics.upstreamErrors.inc({ provider: this.provider.id, kind: 'truncated' });
        this.res.fail(err);
        this.settle(err.status, err);
        return;
      }
      if (size <= MAX_KEPT_REPLY_BYTES) replyJson = json;
      if (transform) {
        ({ body, usage } = transform.json(json));
        retype(this.headers, 'application/json');
      } else usage = this.provider.usageFromJson(json);
    } else if (transform) {
      body = transform.error(status, body, this.upstreamHeaders);
      retype(this.headers, 'application/json');
    }
    // the whole reply is in: the upstream stage is over, not running
    this.req.stages.end();
    this.res.send(status, this.withGatewayHeaders(), body);
    this.overheadMs = this.preDispatchMs + (performance.now() - lastByteAt);
    this.settle(status, undefined, usage, replyJson);
  }

  onError(err: Error): void {
    if (this.settled) return;
    const kind = failureKind(err);
    if (this.res.aborted || kind === 'aborted') {
      this.settle(499);
      return;
    }
    const id = this.provider.id;
    this.deps.metrics.upstreamErrors.inc({ provider: id, kind });
    if (kind === 'connect' || kind === 'timeout') this.deps.health.failed(this.origin);
    // 'other' is not the network: the reply arrived and could not be relayed (say, translated); the sink logs it with its cause
    const gwErr =
      kind === 'timeout'
        ? new GatewayError('upstream_timeout', `upstream ${id} did not answer in time`, { cause: err })
        : new GatewayError('upstream_unavailable', kind === 'other' ? `the reply of upstream ${id} could not be relayed` : `upstream ${id} failed: ${kind}`, { cause: err });
    this.res.fail(gwErr);
    this.settle(gwErr.status, gwErr);
  }

  /** a buffered reply past GW_MAX_REPLY_BYTES: what was held is dropped, the upstream cancelled, the caller answered 502 */
  private overCap(): void {
    const { maxReplyBytes } = this.deps.limits;
    this.parts = [];
    this.deps.metrics.upstreamErrors.inc({ provider: this.provider.id, kind: 'oversized' });
    const err = new GatewayError('upstream_unavailable', `the reply of upstream ${this.provider.id} exceeds the gateway's limit of ${maxReplyBytes} bytes for a non-streamed reply; the upstream call was cancelled`);
    this.res.fail(err);
    this.settle(err.status, err);
    // after settling, so the abort's own error callback finds the exchange already ended
    this.call?.abort(err);
  }

  /** the complete events of what has arrived; an unfinished one is held for the next chunk */
  private wholeEvents(chunk: Buffer): Buffer | undefined {
    const data = this.held ? Buffer.concat([this.held, chunk]) : chunk;
    // an event this large is passed on as it stands rather than re-joined on every chunk
    if (this.held && data.length > MAX_HELD_EVENT_BYTES) {
      this.held = undefined;
      return data;
    }
    const n = (this.framing as Framing)(data);
    this.held = n < data.length ? Buffer.from(data.subarray(n)) : undefined;
    if (n === 0) return undefined;
    return n === data.length ? data : data.subarray(0, n);
  }

  /** re-arming a timer per chunk cost more than the chunk's relay: the timer checks the last chunk's time when it fires */
  private checkIdle(): void {
    const { streamIdleMs } = this.deps.limits;
    const silentFor = performance.now() - this.lastChunkAt;
    if (silentFor >= streamIdleMs) this.timeOut('idle', `stream silent for ${streamIdleMs / 1000} s`);
    else this.idle = setTimeout(() => this.checkIdle(), streamIdleMs - silentFor);
  }

  private timeOut(reason: 'idle' | 'deadline', message: string): void {
    this.deps.metrics.streamTimeouts.inc({ reason });
    const err = new GatewayError('gateway_timeout', message);
    this.res.fail(err);
    this.settle(this.status, err);
    // after settling, so the abort's own error callback finds the exchange already ended
    this.call?.abort(err);
  }

  /** the vendor's headers, then the gateway's, then the stage timings so far */
  private withGatewayHeaders(): HeaderList {
    const h = this.headers;
    for (const g of this.reply.gatewayHeaders) h.push(g);
    h.push(['x-gw-stage-durations', this.req.stages.header()]);
    return h;
  }

  private settle(status: number, error?: GatewayError, usage: Usage | undefined = (this.translator ?? this.reader)?.usage(), replyJson?: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.slot?.release();
    clearTimeout(this.idle);
    clearTimeout(this.deadline);
    this.req.stages.end();
    const streamedText = usage === undefined ? this.reader?.streamedText() : undefined;
    this.resolve({ status, usage, upstreamMs: this.upstreamMs, overheadMs: this.overheadMs, streamed: this.mode === 'stream', streamedText, dispatched: this.dispatched, error, replyJson });
  }
}

/** on an opaque route, only a reply that is (or does not say it is not) JSON can be truncated JSON */
function isJsonOrUntyped(contentType: string | string[] | undefined): boolean {
  return contentType === undefined || (typeof contentType === 'string' && contentType.includes('json'));
}

/** Puts the translated reply's content-type in place of the vendor's. */
function retype(headers: HeaderList, contentType: string): void {
  const at = headers.findIndex(([k]) => k === 'content-type');
  if (at === -1) headers.push(['content-type', contentType]);
  else headers[at] = ['content-type', contentType];
}
