import { GatewayError } from '../errors.js';
import { withoutStack, type LoadMonitor } from '../telemetry/load-monitor.js';

/**
 * A call refused because its origin is at GW_UPSTREAM_MAX_INFLIGHT. Nothing
 * was sent, so another destination or fallback candidate may take the call;
 * only when none can is it the answer: the dispatch-side shed (SPEC
 * overloaded rule 1c), 503 `overloaded` without x-gw-error, since it
 * summarizes the upstreams' state rather than the gateway's own.
 */
export class OriginFull extends GatewayError {}

/** Requests in flight per upstream origin (GW_UPSTREAM_MAX_INFLIGHT). */
export class UpstreamInflight {
  private readonly counts = new Map<string, number>();

  constructor(
    private readonly limit: number,
    private readonly monitor: LoadMonitor,
  ) {}

  /** undefined when the call may go (and must leave() once its reply ended), else the refusal; not a shed until answered() */
  enter(origin: string): OriginFull | undefined {
    const n = this.counts.get(origin) ?? 0;
    if (n >= this.limit) {
      return withoutStack(() => new OriginFull('overloaded', `every destination of this call is at its limit of ${this.limit} requests in flight`, { retryAfterS: this.monitor.retryAfterS(), summary: true }));
    }
    this.counts.set(origin, n + 1);
    return undefined;
  }

  /** the refusal was the call's answer (no other destination or candidate took it): counted as a shed */
  answered(): void {
    this.monitor.noteShed('upstream_inflight');
  }

  leave(origin: string): void {
    const n = (this.counts.get(origin) ?? 1) - 1;
    if (n <= 0) this.counts.delete(origin);
    else this.counts.set(origin, n);
  }
}
