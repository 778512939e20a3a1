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

/**
 * One call's place at an origin, from enter() until release(). A slot is
 * taken before the skills for a call with one origin (src/pipeline/room.ts)
 * and handed to the relay; whoever holds it last gives it back, and a second
 * release() (the relay's settle after the exchange's end, say) is nothing.
 */
export class OriginSlot {
  private held = true;

  constructor(
    private readonly inflight: UpstreamInflight,
    readonly origin: string,
  ) {}

  release(): void {
    if (!this.held) return;
    this.held = false;
    this.inflight.leave(this.origin);
  }
}

/**
 * Requests in flight per upstream origin (GW_UPSTREAM_MAX_INFLIGHT): those
 * sent, and those whose slot was taken before the skills and which are on
 * their way to dispatch (a burst past the limit is shed before it costs a
 * skill pool task, not after).
 */
export class UpstreamInflight {
  private readonly counts = new Map<string, number>();
  /** origins at the limit now: while none is, no call with several destinations can be shed before the skills, and checking costs one read */
  private fullOrigins = 0;

  constructor(
    private readonly limit: number,
    private readonly monitor: LoadMonitor,
  ) {}

  /** the call's slot at `origin` (released once its reply ended, or once it will not be sent there), else the refusal; not a shed until answered() */
  enter(origin: string): OriginSlot | OriginFull {
    const n = this.counts.get(origin) ?? 0;
    if (n >= this.limit) return this.refusal();
    this.counts.set(origin, n + 1);
    if (n + 1 === this.limit) this.fullOrigins++;
    return new OriginSlot(this, origin);
  }

  /** whether any origin is at the limit */
  get anyFull(): boolean {
    return this.fullOrigins > 0;
  }

  /** whether a call to `origin` would be refused now */
  full(origin: string): boolean {
    return (this.counts.get(origin) ?? 0) >= this.limit;
  }

  /** the answer of a call none of whose destinations has room */
  refusal(): OriginFull {
    return withoutStack(() => new OriginFull('overloaded', `every destination of this call is at its limit of ${this.limit} requests in flight`, { retryAfterS: this.monitor.retryAfterS(), summary: true }));
  }

  /** the refusal was the call's answer (no other destination or candidate took it): counted as a shed */
  answered(): void {
    this.monitor.noteShed('upstream_inflight');
  }

  /** a slot given back: OriginSlot.release() calls it, once per slot */
  leave(origin: string): void {
    const n = this.counts.get(origin);
    if (n === undefined) return;
    if (n === this.limit) this.fullOrigins--;
    if (n === 1) this.counts.delete(origin);
    else this.counts.set(origin, n - 1);
  }
}
