import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { RedisClient } from '../stores/redis/client.js';
import { PERIOD_MS, type RollupPeriod, telemetryKeys } from './keys.js';
import { ProjectionSums } from './projection-sums.js';
import { MARKER, parseCounts } from './projections.js';

interface CompactCommands {
  gwUsageCompactBegin(numKeys: number, ...args: string[]): Promise<string[] | null>;
  gwUsageCompactEnd(numKeys: number, ...args: string[]): Promise<number>;
}
type CompactingRedis = RedisClient & CompactCommands;

const begin = readFileSync(new URL('./usage-compact-begin.lua', import.meta.url), 'utf8');
const end = readFileSync(new URL('./usage-compact-end.lua', import.meta.url), 'utf8');

/** a claim on a period lasts this long: a process that dies while summing leaves it to another after that */
const CLAIM_MS = 60_000;
/** cells summed between yields to the event loop, so a day of wide spread never holds it for long */
const CELLS_PER_SLICE = 500;
/** periods queued at most per process (a few hundred bytes each); past it a period is left to the first read over it */
export const MAX_PENDING = 10_000;
/** a period whose summing failed (Redis away or slow) is tried this many times in all */
const ATTEMPTS = 3;

const slice = () => new Promise<void>((r) => setImmediate(r));

/** what became of a period handed to the compactor: its projections stored, a try that failed (tried again), or not queued (the queue was full) */
export type SumOutcome = 'summed' | 'failed' | 'overflow';

export interface CompactorOptions {
  /** a failed try is repeated after this (ms) */
  retryMs: number;
  onOutcome?(outcome: SumOutcome): void;
}

interface Pending {
  tenant: string;
  period: RollupPeriod;
  n: number;
  /** not summed before this time (ms): a row added to the period pushes it later */
  dueAt: number;
  attempts: number;
  /** the claim's token, the same on every try */
  token: string;
}

/**
 * Sums finished hours and days into their projections (projections.ts), once
 * per period, in the background and one period at a time: the period is
 * claimed in Redis (so one process does it), its rollup read, summed here in
 * slices, and stored with its marker, unless a late row arrived meanwhile.
 * Until then, and after a late row, reads take the period from its rollup by
 * every dimension. A period is queued with the time it is due; queuing it
 * again only moves that later, so rows arriving one after another sum it once,
 * after the last. The queue is bounded (MAX_PENDING).
 */
export class UsageCompactor {
  private readonly redis: CompactingRedis;
  /** periods waiting to be summed, by id */
  private readonly queue = new Map<string, Pending>();
  private worker: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** when the timer fires; Infinity without one */
  private timerAt = Infinity;
  private closed = false;

  constructor(
    redis: RedisClient,
    private readonly prefix: string,
    private readonly retentionMs: number,
    private readonly opts: CompactorOptions,
  ) {
    redis.defineCommand('gwUsageCompactBegin', { lua: begin });
    redis.defineCommand('gwUsageCompactEnd', { lua: end });
    this.redis = redis as CompactingRedis;
  }

  /** periods queued */
  get pending(): number {
    return this.queue.size;
  }

  /** queues the period for summing from `dueAt` (ms) on; queued already, it is due at the later of the two times */
  compact(tenant: string, period: RollupPeriod, n: number, dueAt = 0): void {
    if (this.closed) return;
    const id = `${tenant} ${period} ${n}`;
    const had = this.queue.get(id);
    if (had) had.dueAt = Math.max(had.dueAt, dueAt);
    else if (this.queue.size < MAX_PENDING) this.queue.set(id, { tenant, period, n, dueAt, attempts: 0, token: randomBytes(6).toString('base64url') });
    else {
      this.opts.onOutcome?.('overflow');
      return;
    }
    this.kick(dueAt);
  }

  /** drops what is queued; a period being summed is given up */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.queue.clear();
  }

  /**
   * Starts the worker when a period is due, else sets the timer for the
   * earliest. A period queued again only becomes due later, so the timer may
   * fire early; it then looks again.
   */
  private kick(earliest = this.nextDue()): void {
    if (this.worker || this.closed || earliest >= this.timerAt) return;
    clearTimeout(this.timer);
    this.timerAt = Infinity;
    const wait = earliest - Date.now();
    if (wait > 0) {
      this.timerAt = earliest;
      this.timer = setTimeout(() => {
        this.timerAt = Infinity;
        this.kick();
      }, wait).unref();
      return;
    }
    this.worker = this.work().finally(() => {
      this.worker = undefined;
      this.kick();
    });
  }

  private nextDue(): number {
    let next = Infinity;
    for (const p of this.queue.values()) next = Math.min(next, p.dueAt);
    return next;
  }

  /** resolves when every period queued to be due by `byMs` has been summed (or given up) */
  async settled(byMs = Date.now()): Promise<void> {
    for (;;) {
      if (this.worker) {
        await this.worker;
        continue;
      }
      const next = this.nextDue();
      if (this.closed || next > byMs) return;
      await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
      this.kick();
    }
  }

  /** sums the periods due, one at a time */
  private async work(): Promise<void> {
    for (const [id, p] of this.queue) {
      if (this.closed) return;
      if (p.dueAt > Date.now()) continue;
      // off the queue while summed: a row arriving meanwhile queues the period anew
      this.queue.delete(id);
      try {
        if (await this.run(p)) this.opts.onOutcome?.('summed');
      } catch {
        if (this.closed) return;
        this.opts.onOutcome?.('failed');
        const retry = ++p.attempts < ATTEMPTS && !this.queue.has(id) && this.queue.size < MAX_PENDING;
        if (retry) this.queue.set(id, { ...p, dueAt: Date.now() + this.opts.retryMs });
      }
    }
  }

  /** true when this process stored the period's projections */
  private async run({ tenant, period, n, token }: Pending): Promise<boolean> {
    const expiresAt = (n + 1) * PERIOD_MS[period] + this.retentionMs;
    if (expiresAt <= Date.now()) return false;
    const keys = telemetryKeys(this.prefix, tenant);
    const marker = keys.projection(period, n, MARKER);
    const cells = await this.redis.gwUsageCompactBegin(2, marker, keys.usage(period, n), token, String(CLAIM_MS));
    if (cells === null) return false;
    const sums = new ProjectionSums();
    for (let j = 0; j + 1 < cells.length; j += 2) {
      sums.add(cells[j] as string, parseCounts(cells[j + 1] as string));
      if (j % (2 * CELLS_PER_SLICE) === 0) await slice();
    }
    const names = [...sums.byName.keys()];
    const args = [token, String(expiresAt)];
    for (const name of names) {
      const projection = sums.byName.get(name) as Map<string, number[]>;
      args.push(String(projection.size));
      for (const [field, c] of projection) args.push(field, c.join(' '));
    }
    const stored = await this.redis.gwUsageCompactEnd(names.length + 1, marker, ...names.map((name) => keys.projection(period, n, name)), ...args);
    return stored === 1;
  }
}
