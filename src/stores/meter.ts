/**
 * The metering store: spend consumption with reservations, and shared token
 * buckets for rate limits. Two implementations: embedded (exact within one
 * process) and Redis (atomic Lua scripts timed by Redis TIME, shared by every
 * replica). Amounts are USD.
 */

/** One metering period of one org, e.g. `acme:day:2026-11-21`. */
export type MeterBucket = string;

export interface SpendFigures {
  /** real cost of finished calls this period */
  settled: number;
  /** worst-case cost held by calls in flight */
  reserved: number;
}

export interface ReserveResult extends SpendFigures {
  admitted: boolean;
}

export interface ReserveRequest {
  bucket: MeterBucket;
  /** unique per call */
  id: string;
  amount: number;
  cap: number;
  /** the reservation lapses this long after its last renewal (a crashed replica's calls) */
  leaseMs: number;
  /** epoch ms after which the whole bucket may be forgotten (period end plus a margin) */
  keepUntil: number;
}

export interface TokenGrant {
  granted: number;
  /** ms until the shared bucket holds one whole token again (0 when it still has some) */
  waitMs: number;
}

export interface TokenBucketSpec {
  /** tokens per second */
  rate: number;
  /** most tokens the shared bucket holds */
  capacity: number;
}

export interface MeterStore {
  start(): Promise<void>;
  /** atomically drops lapsed reservations, then holds `amount` if settled + reserved + amount ≤ cap */
  reserve(r: ReserveRequest): Promise<ReserveResult>;
  /** ends a reservation (if it has not lapsed) and adds the real cost */
  settle(bucket: MeterBucket, id: string, cost: number): Promise<void>;
  /** extends the leases of reservations still in flight */
  renew(bucket: MeterBucket, ids: readonly string[], leaseMs: number): Promise<void>;
  figures(bucket: MeterBucket): Promise<SpendFigures>;
  /** takes up to `want` tokens from the named shared bucket, refilled at spec.rate */
  take(name: string, want: number, spec: TokenBucketSpec): Promise<TokenGrant>;
  close(): Promise<void>;
}

/**
 * Token-bucket refill and grant, shared by the embedded store and mirrored by
 * take.lua: the bucket starts full, refills continuously, never past capacity.
 */
export function refillAndTake(
  state: { tokens: number; at: number } | undefined,
  nowMs: number,
  want: number,
  spec: TokenBucketSpec,
): { state: { tokens: number; at: number }; grant: TokenGrant } {
  const elapsed = state ? Math.max(0, nowMs - state.at) : 0;
  const available = state ? Math.min(spec.capacity, state.tokens + (elapsed * spec.rate) / 1000) : spec.capacity;
  const granted = Math.max(0, Math.min(want, Math.floor(available)));
  const tokens = available - granted;
  const waitMs = tokens >= 1 ? 0 : Math.ceil(((1 - tokens) * 1000) / spec.rate);
  return { state: { tokens, at: nowMs }, grant: { granted, waitMs } };
}
