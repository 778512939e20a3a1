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

const slice = () => new Promise<void>((r) => setImmediate(r));

/**
 * Sums finished hours and days into their projections (projections.ts), once
 * per period, in the background and one period at a time: the period is
 * claimed in Redis (so one process does it), its rollup read, summed here in
 * slices, and stored with its marker, unless a late row arrived meanwhile.
 * Until then, and after a late row, reads take the period from its rollup by
 * every dimension.
 */
export class UsageCompactor {
  private readonly redis: CompactingRedis;
  /** periods waiting to be summed, by id; summed one at a time, in order */
  private readonly queue = new Map<string, { tenant: string; period: RollupPeriod; n: number }>();
  private worker: Promise<void> | undefined;

  constructor(
    redis: RedisClient,
    private readonly prefix: string,
    private readonly retentionMs: number,
  ) {
    redis.defineCommand('gwUsageCompactBegin', { lua: begin });
    redis.defineCommand('gwUsageCompactEnd', { lua: end });
    this.redis = redis as CompactingRedis;
  }

  /** queues the period for summing unless it is queued already; a failure leaves it to a later read */
  compact(tenant: string, period: RollupPeriod, n: number): void {
    this.queue.set(`${tenant} ${period} ${n}`, { tenant, period, n });
    this.kick();
  }

  private kick(): void {
    if (this.worker || this.queue.size === 0) return;
    this.worker = this.work().finally(() => {
      this.worker = undefined;
      this.kick();
    });
  }

  /** resolves when every queued period has been summed (or given up) */
  async settled(): Promise<void> {
    while (this.worker) await this.worker;
  }

  private async work(): Promise<void> {
    for (const [id, p] of this.queue) {
      await this.run(p.tenant, p.period, p.n).catch(() => undefined);
      this.queue.delete(id);
    }
  }

  private async run(tenant: string, period: RollupPeriod, n: number): Promise<void> {
    const expiresAt = (n + 1) * PERIOD_MS[period] + this.retentionMs;
    if (expiresAt <= Date.now()) return;
    const keys = telemetryKeys(this.prefix, tenant);
    const marker = keys.projection(period, n, MARKER);
    const token = randomBytes(6).toString('base64url');
    const cells = await this.redis.gwUsageCompactBegin(2, marker, keys.usage(period, n), token, String(CLAIM_MS));
    if (cells === null) return;
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
    await this.redis.gwUsageCompactEnd(names.length + 1, marker, ...names.map((name) => keys.projection(period, n, name)), ...args);
  }
}
