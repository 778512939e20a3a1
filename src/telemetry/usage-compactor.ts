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
 * per period, in the background: the period is claimed in Redis (so one
 * process does it), its rollup read, summed here in slices, and stored with
 * its marker, unless a late row arrived meanwhile. Until then, and after a
 * late row, reads take the period from its rollup by every dimension.
 */
export class UsageCompactor {
  private readonly redis: CompactingRedis;
  private readonly running = new Map<string, Promise<void>>();

  constructor(
    redis: RedisClient,
    private readonly prefix: string,
    private readonly retentionMs: number,
  ) {
    redis.defineCommand('gwUsageCompactBegin', { lua: begin });
    redis.defineCommand('gwUsageCompactEnd', { lua: end });
    this.redis = redis as CompactingRedis;
  }

  /** starts summing the period unless this process is at it already; a failure leaves it to a later read */
  compact(tenant: string, period: RollupPeriod, n: number): void {
    const id = `${tenant} ${period} ${n}`;
    if (this.running.has(id)) return;
    const run = this.run(tenant, period, n)
      .catch(() => undefined)
      .finally(() => this.running.delete(id));
    this.running.set(id, run);
  }

  /** resolves when every compaction under way has ended */
  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.all(this.running.values());
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
