import { GatewayError } from '../errors.js';
import { LATE, within } from '../stores/bounded-wait.js';
import { refillAndTake, type MeterStore, type TokenBucketSpec } from '../stores/meter.js';
import type { Logger } from '../telemetry/log.js';
import type { Metrics } from '../telemetry/metrics.js';
import { throttledWarn } from '../telemetry/throttled-log.js';

/** Leased tokens unused this long are dropped, so an idle replica cannot save up a burst. */
export const LOCAL_TOKEN_TTL_MS = 1000;
/** After a failed lease the replica limits on its own for this long before asking again. */
const DEGRADED_MS = 1000;
/**
 * The longest a request waits for a lease. A lease slower than this (Redis
 * stalled, not down) degrades the org to the local bucket as a failed one
 * does, so a slow store costs one request per org and second this wait, not
 * every request the store's command timeout.
 */
export const LEASE_WAIT_MS = 250;
/** For this long after the shared bucket ran dry the org is at its cap: an empty batch refuses instead of waiting. */
const CONTENDED_MS = 1000;

/** Tokens a replica leases at once: 50 ms of the cap (1 to 100). */
export const leaseSize = (rps: number): number => Math.min(100, Math.max(1, Math.ceil(rps * 0.05)));

/**
 * The shared bucket: refilled at the cap, holding half a second of it (at
 * least two leases, so replicas leasing at nearly the same moment below the
 * cap both get tokens). A client may burst half its per-second cap at once;
 * over a 10 s window the burst adds at most 5% to the cap.
 */
export const sharedBucket = (rps: number): TokenBucketSpec => ({ rate: rps, capacity: Math.max(2 * leaseSize(rps), Math.ceil(rps / 2)) });

/** What one replica holds for one org. */
interface Allowance {
  tokens: number;
  leasedAt: number;
  /** the shared bucket said it is empty until then: refuse locally, do not ask */
  dryUntil: number;
  /** when the shared bucket last ran dry */
  dryAt: number;
  pending: Promise<void> | undefined;
  /** a lease scheduled for when the shared bucket refills */
  refillTimer: NodeJS.Timeout | undefined;
  /** shared store unreachable until then: a local bucket at the full cap decides */
  degradedUntil: number;
  local: { tokens: number; at: number } | undefined;
}

export interface RateLimitOptions {
  meter: MeterStore;
  metrics: Metrics;
  log: Logger;
  clock?: () => number;
}

/**
 * Per-org requests-per-second caps, shared by every replica without a store
 * round trip per request: each replica leases small batches of tokens from a
 * shared token bucket (one atomic script per lease) and answers from its
 * local batch synchronously, topping it up in the background before it runs
 * out. A request waits for a lease only when its replica's batch is empty
 * and the org has not been at its cap in the last second (a cold org, or a
 * burst outrunning the top-up); at the cap an empty batch is a refusal, and
 * refills happen in the background. docs/operations.md "Rate limits"
 * explains and measures the scheme.
 */
export class RateLimiter {
  private readonly allowances = new Map<string, Allowance>();
  private readonly clock: () => number;
  private readonly warnUnreachable: (obj: object) => void;

  constructor(private readonly opts: RateLimitOptions) {
    this.clock = opts.clock ?? Date.now;
    this.warnUnreachable = throttledWarn(opts.log, 'rate limit: shared bucket unreachable; limiting on this replica alone');
  }

  /**
   * Admits one request of `orgId` (synchronously while its batch lasts), or
   * throws 429 rate_limited. Returns the requests this replica may still
   * admit for the org at once (its leased batch, or its local bucket while
   * the shared one is away): a lower bound of what the org has left.
   */
  admit(orgId: string, rps: number): number | Promise<number> {
    const a = this.allowance(orgId);
    const now = this.clock();
    if (now < a.degradedUntil) return this.admitLocally(a, now, rps);
    if (this.takeLocal(a, now)) {
      // top up ahead of need (once the shared bucket can give), so a steady caller never finds the batch empty
      if (a.tokens <= leaseSize(rps) / 2) {
        if (now >= a.dryUntil) void this.lease(orgId, a, rps);
        else this.leaseWhenRefilled(orgId, a, rps, a.dryUntil - now);
      }
      return a.tokens;
    }
    if (now < a.dryUntil) {
      this.leaseWhenRefilled(orgId, a, rps, a.dryUntil - now);
      throw rateLimited(a.dryUntil - now, rps);
    }
    if (now - a.dryAt < CONTENDED_MS) {
      // at the cap a lease brings a token or two: refuse now and lease in the background, at most
      // once per lease's worth of time, so refusals cost the shared store nothing however many come
      this.leaseWhenRefilled(orgId, a, rps, Math.ceil((leaseSize(rps) * 1000) / rps) / 2);
      throw rateLimited(1000 / rps, rps);
    }
    this.opts.metrics.rateLimitWaits.inc();
    return within(this.lease(orgId, a, rps), LEASE_WAIT_MS).then((leased) => {
      const after = this.clock();
      if (leased === LATE) {
        this.opts.metrics.rateLimitLeases.inc({ result: 'slow' });
        this.warnUnreachable({ org_id: orgId, waited_ms: LEASE_WAIT_MS });
        a.degradedUntil = Math.max(a.degradedUntil, after + DEGRADED_MS);
      }
      if (after < a.degradedUntil) return this.admitLocally(a, after, rps);
      if (this.takeLocal(a, after)) return a.tokens;
      throw rateLimited(Math.max(a.dryUntil - after, 1000 / rps), rps);
    });
  }

  private takeLocal(a: Allowance, now: number): boolean {
    if (now - a.leasedAt >= LOCAL_TOKEN_TTL_MS) a.tokens = 0;
    if (a.tokens < 1) return false;
    a.tokens -= 1;
    return true;
  }

  /** One lease in flight per org and replica; every waiter shares it. */
  private lease(orgId: string, a: Allowance, rps: number): Promise<void> {
    a.pending ??= this.opts.meter
      .take(orgId, leaseSize(rps), sharedBucket(rps))
      .then(
        (grant) => {
          this.opts.metrics.rateLimitLeases.inc({ result: 'ok' });
          const now = this.clock();
          if (now - a.leasedAt >= LOCAL_TOKEN_TTL_MS) a.tokens = 0;
          a.tokens += grant.granted;
          a.leasedAt = now;
          // dry (nothing granted): nobody here asks again before a whole lease could have accrued
          a.dryUntil = grant.granted === 0 ? now + Math.max(grant.waitMs, Math.ceil((leaseSize(rps) * 1000) / rps)) : 0;
          if (a.dryUntil > 0) a.dryAt = now;
          // left empty by a dry bucket: lease again once it refills, so the next caller need not wait
          if (a.dryUntil > 0 && a.tokens < 1) this.leaseWhenRefilled(orgId, a, rps, a.dryUntil - now);
        },
        (err: unknown) => {
          this.opts.metrics.rateLimitLeases.inc({ result: 'error' });
          this.warnUnreachable({ err: String(err), org_id: orgId });
          a.degradedUntil = this.clock() + DEGRADED_MS;
        },
      )
      .finally(() => {
        a.pending = undefined;
      });
    return a.pending;
  }

  /** Refused callers do not wait: the next lease happens in the background once the bucket has refilled. */
  private leaseWhenRefilled(orgId: string, a: Allowance, rps: number, inMs: number): void {
    if (a.refillTimer) return;
    a.refillTimer = setTimeout(() => {
      a.refillTimer = undefined;
      void this.lease(orgId, a, rps);
    }, inMs);
    a.refillTimer.unref();
  }

  /** Fallback while the shared store is away: this replica alone at the full cap. */
  private admitLocally(a: Allowance, now: number, rps: number): number {
    const { state, grant } = refillAndTake(a.local, now, 1, { rate: rps, capacity: Math.max(1, rps) });
    a.local = state;
    if (grant.granted === 1) return Math.floor(state.tokens);
    throw rateLimited(grant.waitMs, rps);
  }

  private allowance(orgId: string): Allowance {
    let a = this.allowances.get(orgId);
    if (!a) {
      a = { tokens: 0, leasedAt: 0, dryUntil: 0, dryAt: 0, pending: undefined, refillTimer: undefined, degradedUntil: 0, local: undefined };
      this.allowances.set(orgId, a);
    }
    return a;
  }
}

/**
 * 429 with `Retry-After` (whole seconds, at least 1) and the generic
 * rate-limit headers clients read: the org's cap in requests per second,
 * nothing remaining, and the seconds until a request can be admitted again
 * (to the millisecond).
 */
function rateLimited(waitMs: number, rps: number): GatewayError {
  return new GatewayError('rate_limited', 'requests-per-second cap of the org exceeded', {
    retryAfterS: Math.max(1, Math.ceil(waitMs / 1000)),
    headers: [
      ['x-ratelimit-limit', String(rps)],
      ['x-ratelimit-remaining', '0'],
      ['x-ratelimit-reset', String(Math.ceil(waitMs) / 1000)],
    ],
  });
}
