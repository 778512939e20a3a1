import { refillAndTake, type MeterBucket, type MeterStore, type ReserveRequest, type ReserveResult, type SpendFigures, type TokenBucketSpec, type TokenGrant } from '../meter.js';

interface SpendState {
  settled: number;
  /** reservation id → [amount, lapses at] */
  held: Map<string, [number, number]>;
  keepUntil: number;
}

/**
 * In-process metering for a single replica (embedded mode). Exact, since one
 * event loop is the only writer. Consumption is not persisted: a restart
 * begins the period's count again (documented in docs/operations.md).
 */
export class EmbeddedMeterStore implements MeterStore {
  private readonly spend = new Map<MeterBucket, SpendState>();
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private nextSweep = 0;

  constructor(private readonly clock: () => number = Date.now) {}

  async start(): Promise<void> {}

  async reserve(r: ReserveRequest): Promise<ReserveResult> {
    const now = this.clock();
    this.forgetEnded(now);
    const s = this.state(r.bucket, r.keepUntil);
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
    return { admitted, settled: s.settled, reserved };
  }

  async settle(bucket: MeterBucket, id: string, cost: number): Promise<void> {
    const s = this.spend.get(bucket);
    if (!s) return;
    s.held.delete(id);
    s.settled += cost;
  }

  async renew(bucket: MeterBucket, ids: readonly string[], leaseMs: number): Promise<void> {
    const s = this.spend.get(bucket);
    if (!s) return;
    const lapses = this.clock() + leaseMs;
    for (const id of ids) {
      const h = s.held.get(id);
      if (h) h[1] = lapses;
    }
  }

  async figures(bucket: MeterBucket): Promise<SpendFigures> {
    const s = this.spend.get(bucket);
    if (!s) return { settled: 0, reserved: 0 };
    const now = this.clock();
    let reserved = 0;
    for (const [amount, lapses] of s.held.values()) if (lapses > now) reserved += amount;
    return { settled: s.settled, reserved };
  }

  async take(name: string, want: number, spec: TokenBucketSpec): Promise<TokenGrant> {
    const { state, grant } = refillAndTake(this.buckets.get(name), this.clock(), want, spec);
    this.buckets.set(name, state);
    return grant;
  }

  async close(): Promise<void> {}

  private state(bucket: MeterBucket, keepUntil: number): SpendState {
    let s = this.spend.get(bucket);
    if (!s) {
      s = { settled: 0, held: new Map(), keepUntil };
      this.spend.set(bucket, s);
    }
    return s;
  }

  /** drops ended periods, at most once a minute */
  private forgetEnded(now: number): void {
    if (now < this.nextSweep) return;
    this.nextSweep = now + 60_000;
    for (const [bucket, s] of this.spend) if (s.keepUntil <= now) this.spend.delete(bucket);
  }
}
