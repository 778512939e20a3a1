import type { GatewayError } from '../errors.js';
import type { LoadMonitor } from '../telemetry/load-monitor.js';

/**
 * Requests in flight per upstream origin (GW_UPSTREAM_MAX_INFLIGHT). A call
 * to an origin at its limit is shed at dispatch (SPEC overloaded rule 1c):
 * 503 `overloaded` in the surface's envelope, without x-gw-error, since it
 * summarizes the upstream's state rather than the gateway's own.
 */
export class UpstreamInflight {
  private readonly counts = new Map<string, number>();

  constructor(
    private readonly limit: number,
    private readonly monitor: LoadMonitor,
  ) {}

  /** undefined when the call may go (and must leave() once its reply ended), else the dispatch-side shed */
  enter(origin: string): GatewayError | undefined {
    const n = this.counts.get(origin) ?? 0;
    if (n >= this.limit) return this.monitor.shed('upstream_inflight', `every destination of this call is at its limit of ${this.limit} requests in flight`, true);
    this.counts.set(origin, n + 1);
    return undefined;
  }

  leave(origin: string): void {
    const n = (this.counts.get(origin) ?? 1) - 1;
    if (n <= 0) this.counts.delete(origin);
    else this.counts.set(origin, n);
  }
}
