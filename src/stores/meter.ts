/**
 * The metering store: spend consumption with reservations, and shared token
 * buckets for rate limits. Two implementations: embedded (exact within one
 * process, timed by the process clock) and Redis (atomic Lua scripts timed by
 * Redis TIME, shared by every replica). Amounts are USD.
 *
 * The store's clock is the only clock of a spend-cap period: the store decides
 * which period a call falls in, when that period resets, and when its record
 * expires, so no two clocks ever have to agree about midnight.
 */

export type CapPeriod = 'day' | 'month';

/** One org's consumption for one kind of period, e.g. `acme:day`; the store keeps its current period only. */
export type MeterAccount = string;

export interface SpendFigures {
  /** real cost of finished calls this period */
  settled: number;
  /** worst-case cost held by calls in flight */
  reserved: number;
}

/** The figures of the period the store's clock is in. */
export interface PeriodFigures extends SpendFigures {
  /** the period's id: `2026-11-21` (day) or `2026-11` (month) */
  period: string;
  /** epoch ms at which the next period starts */
  resetsAt: number;
}

export interface ReserveResult extends PeriodFigures {
  admitted: boolean;
}

export interface ReserveRequest {
  account: MeterAccount;
  kind: CapPeriod;
  /** unique per call */
  id: string;
  amount: number;
  cap: number;
  /** the reservation lapses this long after its last renewal (a crashed replica's calls) */
  leaseMs: number;
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
  /**
   * atomically: starts the account afresh when the store's clock has entered a
   * new period, drops lapsed reservations, then holds `amount` if
   * settled + reserved + amount ≤ cap
   */
  reserve(r: ReserveRequest): Promise<ReserveResult>;
  /** ends a reservation (if it has not lapsed) and adds the real cost to its period, unless that period is over */
  settle(account: MeterAccount, period: string, id: string, cost: number): Promise<void>;
  /** extends the leases of reservations still in flight */
  renew(account: MeterAccount, ids: readonly string[], leaseMs: number): Promise<void>;
  /** the current period's figures (zero when nothing was spent in it) */
  figures(account: MeterAccount, kind: CapPeriod): Promise<PeriodFigures>;
  /** takes up to `want` tokens from the named shared bucket, refilled at spec.rate */
  take(name: string, want: number, spec: TokenBucketSpec): Promise<TokenGrant>;
  close(): Promise<void>;
}

const DAY_MS = 86_400_000;

/** The UTC day or calendar month holding `now` (epoch ms); mirrored by meter-period.lua. */
export function periodOf(now: number, kind: CapPeriod): { id: string; start: number; end: number } {
  const d = new Date(now);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  if (kind === 'day') {
    const start = Date.UTC(y, m, d.getUTCDate());
    return { id: new Date(start).toISOString().slice(0, 10), start, end: start + DAY_MS };
  }
  const start = Date.UTC(y, m, 1);
  return { id: new Date(start).toISOString().slice(0, 7), start, end: Date.UTC(y, m + 1, 1) };
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
