import {
  periodOf,
  refillAndTake,
  type CapPeriod,
  type MeterAccount,
  type MeterStore,
  type PeriodFigures,
  type ReserveRequest,
  type ReserveResult,
  type TokenBucketSpec,
  type TokenGrant,
} from '../meter.js';

interface SpendState {
  period: string;
  /** epoch ms the period ends (the state is forgotten then) */
  end: number;
  settled: number;
  /** reservation id → [amount, lapses at] */
  held: Map<string, [number, number]>;
}

/**
 * In-process metering for a single replica (embedded mode). Exact, since one
 * event loop is the only writer; its clock (the process's, injectable) alone
 * decides periods. Consumption is not persisted: a restart begins the period's
 * count again (documented in docs/operations.md).
 */
export class EmbeddedMeterStore implements MeterStore {
  private readonly spend = new Map<MeterAccount, SpendState>();
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private nextSweep = 0;

  constructor(private readonly clock: () => number = Date.now) {}

  async start(): Promise<void> {}

  async reserve(r: ReserveRequest): Promise<ReserveResult> {
    const now = this.clock();
    this.forgetEnded(now);
    const s = this.current(r.account, r.kind, now);
    let reserved = 0;
    for (const [id, [amount, lapses]] of s.held) {
      if (lapses <= now) s.held.delete(id);
      else reserved += amount;
    }
    const admitted = s.settled + reserved + r.amount <= r.cap;
    if (admitted) {
      s.held.set(r.id, [r.amount, now + r.leaseMs]);
      reserved += r.amount;
    }
    return { admitted, settled: s.settled, reserved, period: s.period, resetsAt: s.end };
  }

  async settle(account: MeterAccount, period: string, id: string, cost: number): Promise<void> {
    const s = this.spend.get(account);
    // the reservation's period is over: its cost belongs to a period nobody reads any more
    if (!s || s.period !== period) return;
    s.held.delete(id);
    s.settled += cost;
  }

  async renew(account: MeterAccount, ids: readonly string[], leaseMs: number): Promise<void> {
    const s = this.spend.get(account);
    if (!s) return;
    const lapses = this.clock() + leaseMs;
    for (const id of ids) {
      const h = s.held.get(id);
      if (h) h[1] = lapses;
    }
  }

  async figures(account: MeterAccount, kind: CapPeriod): Promise<PeriodFigures> {
    const now = this.clock();
    const p = periodOf(now, kind);
    const s = this.spend.get(account);
    if (!s || s.period !== p.id) return { settled: 0, reserved: 0, period: p.id, resetsAt: p.end };
    let reserved = 0;
    for (const [amount, lapses] of s.held.values()) if (lapses > now) reserved += amount;
    return { settled: s.settled, reserved, period: s.period, resetsAt: s.end };
  }

  async take(name: string, want: number, spec: TokenBucketSpec): Promise<TokenGrant> {
    const { state, grant } = refillAndTake(this.buckets.get(name), this.clock(), want, spec);
    this.buckets.set(name, state);
    return grant;
  }

  async close(): Promise<void> {}

  /** the account's state for the period holding `now`; a new period starts from zero */
  private current(account: MeterAccount, kind: CapPeriod, now: number): SpendState {
    const p = periodOf(now, kind);
    let s = this.spend.get(account);
    if (!s || s.period !== p.id) {
      s = { period: p.id, end: p.end, settled: 0, held: new Map() };
      this.spend.set(account, s);
    }
    return s;
  }

  /** drops ended periods, at most once a minute */
  private forgetEnded(now: number): void {
    if (now < this.nextSweep) return;
    this.nextSweep = now + 60_000;
    for (const [account, s] of this.spend) if (s.end <= now) this.spend.delete(account);
  }
}
