import { GatewayError } from '../errors.js';
import type { GatewayRequest, HeaderList, ResponseSink } from '../http/types.js';
import type { ProviderAdapter } from '../providers/adapter.js';
import type { UpstreamRequest, Usage } from '../providers/types.js';
import type { Metrics } from '../telemetry/metrics.js';
import type { ReplyTransform, StreamTransform } from '../translate/types.js';
import { failureKind, type Upstream } from '../upstream/client.js';
import { relayResponseHeaders } from './forward-headers.js';

export interface RelayLimits {
  streamIdleMs: number;
  streamDeadlineMs: number;
}

export interface RelayOutcome {
  status: number;
  usage: Usage | undefined;
  upstreamMs: number;
  streamed: boolean;
  /** set when the gateway, not the vendor, ended the exchange */
  error?: GatewayError;
}

const STREAM_TYPES = ['text/event-stream', 'application/vnd.amazon.eventstream'];
const isStream = (contentType: string | string[] | undefined): boolean =>
  typeof contentType === 'string' && STREAM_TYPES.some((t) => contentType.startsWith(t));

/** The vendor's headers with the content-type of the translated reply in place of its own. */
const retyped = (headers: HeaderList, contentType: string): HeaderList => [...headers.filter(([k]) => k !== 'content-type'), ['content-type', contentType]];

/**
 * Sends one request upstream and relays the answer: a stream chunk by chunk
 * with backpressure and idle/deadline timers, anything else buffered so a 2xx
 * that does not parse as JSON becomes upstream_truncated instead of a 200.
 * Vendor errors are relayed as the vendor sent them. A `transform` (a
 * translated call) rewrites the reply into the caller's wire format; without
 * one the bytes pass untouched.
 */
export function relay(
  deps: { upstream: Upstream; metrics: Metrics; limits: RelayLimits },
  req: GatewayRequest,
  res: ResponseSink,
  provider: ProviderAdapter,
  request: UpstreamRequest,
  gatewayHeaders: HeaderList,
  transform?: ReplyTransform,
): Promise<RelayOutcome> {
  return new Promise((resolve) => {
    const started = performance.now();
    req.stages.begin(`upstream_${provider.id}`);
    let status = 0;
    let upstreamMs = 0;
    let mode: 'pending' | 'stream' | 'buffer' = 'pending';
    const parts: Buffer[] = [];
    let size = 0;
    const reader = provider.streamUsage();
    let idle: NodeJS.Timeout | undefined;
    let deadline: NodeJS.Timeout | undefined;
    let settled = false;
    let pendingHeaders: HeaderList | undefined;
    let upstreamHeaders: Record<string, string | string[] | undefined> = {};
    let translator: StreamTransform | undefined;

    const settle = (outcome: Omit<RelayOutcome, 'upstreamMs' | 'streamed'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(idle);
      clearTimeout(deadline);
      req.signal.removeEventListener('abort', onAbort);
      req.stages.end();
      resolve({ ...outcome, upstreamMs, streamed: mode === 'stream' });
    };

    const timeOut = (reason: 'idle' | 'deadline', message: string) => {
      deps.metrics.streamTimeouts.inc({ reason });
      const err = new GatewayError('gateway_timeout', message);
      res.fail(err);
      settle({ status, usage: reader.usage(), error: err });
      // after settling, so the abort's own error callback finds the exchange already ended
      call.abort(err);
    };

    const call = deps.upstream.dispatch(request, {
      onHeaders(s, headers) {
        status = s;
        upstreamMs = performance.now() - started;
        res.meta.upstreamMs = upstreamMs;
        deps.metrics.upstreamLatency.observe({ provider: provider.id }, upstreamMs / 1000);
        if (s >= 200 && s < 300 && isStream(headers['content-type'])) {
          mode = 'stream';
          translator = transform?.stream();
          const relayed = transform ? retyped(relayResponseHeaders(headers), transform.streamContentType) : relayResponseHeaders(headers);
          res.start(s, [...relayed, ...gatewayHeaders, ['x-gw-stage-durations', req.stages.header()]]);
          idle = setTimeout(() => timeOut('idle', `stream silent for ${deps.limits.streamIdleMs / 1000} s`), deps.limits.streamIdleMs);
          const left = Math.max(0, deps.limits.streamDeadlineMs - req.stages.elapsedMs);
          deadline = setTimeout(() => timeOut('deadline', `stream open longer than ${deps.limits.streamDeadlineMs / 1000} s`), left);
        } else {
          mode = 'buffer';
          pendingHeaders = relayResponseHeaders(headers);
          upstreamHeaders = headers;
        }
      },
      onData(chunk) {
        if (mode === 'stream') {
          reader.push(chunk);
          idle?.refresh();
          const out = translator ? translator.push(chunk) : chunk;
          if (out === undefined || res.write(out)) return true;
          res.onDrain(() => call.resume());
          return false;
        }
        parts.push(chunk);
        size += chunk.length;
        return true;
      },
      onEnd() {
        if (mode === 'stream') {
          res.end(translator?.end());
          settle({ status, usage: reader.usage() });
          return;
        }
        let body = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, size);
        let usage: Usage | undefined;
        if (status >= 200 && status < 300) {
          let json: unknown;
          try {
            json = JSON.parse(body.toString('utf8'));
          } catch {
            const err = new GatewayError('upstream_truncated', 'the provider answered 2xx with a body that is not valid JSON; not retried, since a retry would be paid twice');
            deps.metrics.upstreamErrors.inc({ provider: provider.id, kind: 'truncated' });
            res.fail(err);
            settle({ status: err.status, usage: undefined, error: err });
            return;
          }
          usage = provider.usageFromJson(json);
          if (transform) body = transform.json(json);
        } else if (transform) {
          body = transform.error(status, body, upstreamHeaders);
        }
        const relayed = transform ? retyped(pendingHeaders ?? [], 'application/json') : (pendingHeaders ?? []);
        res.send(status, [...relayed, ...gatewayHeaders, ['x-gw-stage-durations', req.stages.header()]], body);
        settle({ status, usage });
      },
      onError(err) {
        const kind = failureKind(err);
        if (settled) return;
        if (res.aborted || (kind === 'aborted' && req.signal.aborted)) {
          settle({ status: 499, usage: reader.usage() });
          return;
        }
        deps.metrics.upstreamErrors.inc({ provider: provider.id, kind });
        const gwErr =
          kind === 'timeout'
            ? new GatewayError('upstream_timeout', `upstream ${provider.id} did not answer in time`, { cause: err })
            : new GatewayError('upstream_unavailable', `upstream ${provider.id} failed: ${kind}`, { cause: err });
        res.fail(gwErr);
        settle({ status: gwErr.status, usage: reader.usage(), error: gwErr });
      },
    });

    function onAbort() {
      call.abort();
    }
    if (req.signal.aborted) onAbort();
    else req.signal.addEventListener('abort', onAbort, { once: true });
  });
}
