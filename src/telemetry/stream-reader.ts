import { readFileSync } from 'node:fs';
import { GatewayError } from '../errors.js';
import { redisClient, type RedisClient, type RedisTarget } from '../stores/redis/client.js';
import { HOUR_MS, hourOf, PERIOD_MS, telemetryKeys, type TelemetryKeys } from './keys.js';
import { MARKER, parseCounts, projectedCells, projectionFor, projectionsRead, WHOLE } from './projections.js';
import { rollupReads, type RollupRead } from './rollup-plan.js';
import type { DecisionRecord, RequestRow } from './row.js';
import { decodeEntry } from './stream-codec.js';
import { type Counts, type Dimension, UsageAggregator, type UsageQuery, type UsageRow } from './usage.js';
import { type SumOutcome, UsageCompactor } from './usage-compactor.js';

export interface StreamReaderOptions {
  target: RedisTarget;
  prefix: string;
  retentionMs: number;
  /** a read that takes longer is 504 store_timeout */
  boundMs: number;
  onSumOutcome?(outcome: SumOutcome): void;
}

export interface ListQuery {
  startMs: number;
  limit: number;
  /** exact-match filters by row column */
  filters: ReadonlyArray<readonly [string, string]>;
  withDecision: boolean;
}

export interface StoredRequest {
  row: RequestRow;
  decision: DecisionRecord | undefined;
}

/** a period is summed into projections this long after it ends, when rows still on their way have arrived */
const SUM_AFTER_MS = 60_000;
const HOURS_PER_DAY = 24;

/** entries read per XREVRANGE page of the durable list */
const PAGE = 500;

type Entry = [id: string, fields: string[]];

interface ReadCommands {
  gwUsageRead(numKeys: number, ...keys: string[]): Promise<string[][]>;
}

const readScript = readFileSync(new URL('./usage-read.lua', import.meta.url), 'utf8');

/**
 * Reads the tenants' telemetry from Redis on its own connection: the durable
 * list (newest first, by time-bounded stream ids), a single request through
 * the per-hour id index, and usage from the rollups and their projections.
 * Every read is bounded; past the bound it is 504 store_timeout with its remedy.
 */
export class StreamReader {
  private readonly redis: RedisClient & ReadCommands;
  private readonly compactor: UsageCompactor;

  constructor(private readonly opts: StreamReaderOptions) {
    const redis = redisClient(opts.target, {
      connectionName: `${opts.prefix}telemetry-reader`,
      commandTimeout: opts.boundMs,
      maxRetriesPerRequest: 1,
    });
    redis.defineCommand('gwUsageRead', { lua: readScript });
    this.redis = redis as RedisClient & ReadCommands;
    this.redis.on('error', () => undefined);
    this.compactor = new UsageCompactor(this.redis, opts.prefix, opts.retentionMs, { retryMs: SUM_AFTER_MS, onOutcome: opts.onSumOutcome });
  }

  async start(): Promise<void> {
    await this.redis.connect();
  }

  close(): void {
    this.compactor.close();
    this.redis.disconnect();
  }

  /** periods usage reads queued for summing into projections */
  get pendingSums(): number {
    return this.compactor.pending;
  }

  async list(tenant: string, q: ListQuery): Promise<StoredRequest[]> {
    return this.bounded('a narrower window or more filters', async (deadline) => {
      const key = telemetryKeys(this.opts.prefix, tenant).rows;
      const out: StoredRequest[] = [];
      let end = '+';
      // rows past the retention that the approximate trim left are not answered
      const start = `${Math.max(0, q.startMs, Date.now() - this.opts.retentionMs)}-0`;
      // unfiltered, the first page is all that is needed (unless rows arrived late)
      const count = q.filters.length === 0 ? Math.min(PAGE, q.limit) : PAGE;
      for (;;) {
        const page = (await this.redis.xrevrange(key, end, start, 'COUNT', count)) as Entry[];
        for (const [, fields] of page) {
          const e = decodeEntry(fields, q.withDecision);
          if (e === undefined) continue;
          if (!q.filters.every(([col, want]) => matches(e.row, col, want))) continue;
          if (Date.parse(e.row.ts) < q.startMs) continue;
          out.push(e);
          if (out.length >= q.limit) return out;
        }
        if (page.length < count) return out;
        end = `(${(page[page.length - 1] as Entry)[0]}`;
        deadline();
      }
    });
  }

  async one(tenant: string, requestId: string): Promise<StoredRequest | undefined> {
    return this.bounded('retry shortly', async () => {
      const keys = telemetryKeys(this.opts.prefix, tenant);
      const now = hourOf(Date.now());
      const hours = Math.ceil(this.opts.retentionMs / HOUR_MS) + 1;
      const pipeline = this.redis.pipeline();
      for (let h = now; h > now - hours; h--) pipeline.hget(keys.index(h), requestId);
      const results = (await pipeline.exec()) ?? [];
      // a lookup that failed (timed out) is not an absent id: it is thrown, never answered as 404
      const failed = results.find(([err]) => err);
      if (failed) throw failed[0];
      const found = results.map(([, id]) => id).find((id): id is string => typeof id === 'string');
      if (found === undefined) return undefined;
      // the index outlives its hour's rows by up to an hour; the stream id is the time Redis appended the row
      if (entryMs(found) < Date.now() - this.opts.retentionMs) return undefined;
      const [entry] = (await this.redis.xrange(keys.rows, found, found)) as Entry[];
      return entry ? decodeEntry(entry[1], true) : undefined;
    });
  }

  /**
   * Usage of the window ending now, summed from the rollups of its minutes,
   * hours or days (rollup-plan.ts), never from raw rows: for a query naming
   * at most two dimensions, from the projections on them of every period
   * summed whole (projections.ts; a day not yet whole by its hours), the rest
   * from every combination of dimension values. Finished periods read so are
   * summed into projections in the background for the next read (the writer
   * that appended their rows normally has done that already).
   */
  async usage(tenant: string, query: UsageQuery, windowMs: number, limit: number): Promise<UsageRow[]> {
    return this.bounded('a shorter window or fewer dimensions', async (deadline) => {
      const keys = telemetryKeys(this.opts.prefix, tenant);
      const now = Date.now();
      const reads = rollupReads(now, windowMs, query.bucket);
      const dims = reads.some((r) => r.period === 'minute') ? undefined : projectionFor(query);
      const agg = new UsageAggregator(query);
      let full = reads;
      let unsummed: RollupRead[] = [];
      if (dims !== undefined) {
        const plan = await this.projectedPlan(keys, reads, now);
        deadline();
        const projected = new UsageAggregator(query, dims);
        await this.readProjections(keys, plan.projected, dims, projected);
        agg.merge(projected);
        ({ full, unsummed } = plan);
      }
      if (full.length > 0) await this.readFull(keys, full, agg);
      deadline();
      // after the answer, so the summing (one period at a time) never delays it
      for (const r of unsummed) this.compactor.compact(tenant, r.period, r.n);
      return agg.rows(limit);
    });
  }

  /** resolves when the projections usage reads started summing are stored (or given up) */
  compactions(): Promise<void> {
    return this.compactor.settled();
  }

  /**
   * Which of the reads have whole projections and which are read by every
   * combination (a day without them is taken by its hours up to now); and
   * the finished periods among them not summed yet.
   */
  private async projectedPlan(keys: TelemetryKeys, reads: RollupRead[], nowMs: number): Promise<{ projected: RollupRead[]; full: RollupRead[]; unsummed: RollupRead[] }> {
    const lastHour = hourOf(nowMs);
    const hoursOf = (day: number): RollupRead[] => {
      const out: RollupRead[] = [];
      for (let h = day * HOURS_PER_DAY; h < (day + 1) * HOURS_PER_DAY && h <= lastHour; h++) out.push({ period: 'hour', n: h });
      return out;
    };
    const candidates = reads.flatMap((r) => (r.period === 'day' ? [r, ...hoursOf(r.n)] : [r]));
    // one slot (the tenant's tag): one MGET
    const markers = await this.redis.mget(candidates.map((r) => keys.projection(r.period, r.n, MARKER)));
    const whole = new Set<string>();
    markers.forEach((value, i) => {
      const r = candidates[i] as RollupRead;
      if (value === WHOLE) whole.add(`${r.period} ${r.n}`);
    });
    const projected: RollupRead[] = [];
    const full: RollupRead[] = [];
    const isWhole = (r: RollupRead) => whole.has(`${r.period} ${r.n}`);
    const finished = (r: RollupRead) => (r.n + 1) * PERIOD_MS[r.period] + SUM_AFTER_MS <= nowMs;
    const unsummed = candidates.filter((r) => !isWhole(r) && finished(r));
    const place = (r: RollupRead) => (isWhole(r) ? projected : full).push(r);
    for (const r of reads) {
      // a day not summed is taken by its hours once they are (all but the latest), else whole from every combination
      if (r.period === 'day' && !isWhole(r) && hoursOf(r.n).every((h) => isWhole(h) || !finished(h))) hoursOf(r.n).forEach(place);
      else place(r);
    }
    return { projected, full, unsummed };
  }

  private async readProjections(keys: TelemetryKeys, reads: RollupRead[], dims: Dimension[], agg: UsageAggregator): Promise<void> {
    if (reads.length === 0) return;
    const names = projectionsRead(dims);
    const hashKeys = reads.flatMap((r) => names.map((name) => keys.projection(r.period, r.n, name)));
    // a few small hashes a period: one script call, not a command each
    const results = await this.redis.gwUsageRead(hashKeys.length, ...hashKeys);
    reads.forEach((r, i) => {
      const hashes = results.slice(i * names.length, (i + 1) * names.length).map(cellsOf);
      for (const [tuple, c] of projectedCells(dims, hashes)) agg.addCounts(tuple, r.n * PERIOD_MS[r.period], c);
    });
  }

  private async readFull(keys: TelemetryKeys, reads: RollupRead[], agg: UsageAggregator): Promise<void> {
    const pipeline = this.redis.pipeline();
    // by its upper-case name ioredis hands HGETALL's reply over as Redis sends it, a flat
    // field-value array, not as an object built key by key: a read may hold 100,000 cells
    for (const r of reads) pipeline.call('HGETALL', keys.usage(r.period, r.n));
    const results = (await pipeline.exec()) ?? [];
    results.forEach(([err, reply], i) => {
      if (err) throw err;
      const { period, n } = reads[i] as RollupRead;
      const atMs = n * PERIOD_MS[period];
      const cells = flatCells(reply);
      for (let j = 0; j + 1 < cells.length; j += 2) agg.add(cells[j] as string, atMs, cells[j + 1] as string);
    });
  }

  /** runs `read` within the bound; `deadline()` throws once it has passed */
  private async bounded<T>(remedy: string, read: (deadline: () => void) => Promise<T>): Promise<T> {
    const until = Date.now() + this.opts.boundMs;
    const timeout = () => new GatewayError('store_timeout', `the telemetry store did not answer within ${this.opts.boundMs / 1000} s; try ${remedy}`);
    try {
      return await read(() => {
        if (Date.now() > until) throw timeout();
      });
    } catch (err) {
      if (err instanceof GatewayError) throw err;
      if (err instanceof Error && /timed? ?out/i.test(err.message)) throw timeout();
      throw err;
    }
  }
}

/** the time (ms) of a stream entry id `<ms>-<seq>` */
const entryMs = (id: string): number => Number(id.slice(0, id.indexOf('-')));

/** HGETALL's reply as a flat field-value array */
const flatCells = (reply: unknown): string[] => (Array.isArray(reply) ? (reply as string[]) : Object.entries(reply as Record<string, string>).flat());

function cellsOf(reply: unknown): Map<string, Counts> {
  const flat = flatCells(reply);
  const out = new Map<string, Counts>();
  for (let j = 0; j + 1 < flat.length; j += 2) out.set(flat[j] as string, parseCounts(flat[j + 1] as string));
  return out;
}

/** an exact-match filter: the column's value as the query spells it (a null value matches nothing) */
function matches(row: RequestRow, column: string, want: string): boolean {
  const v = row[column as keyof RequestRow];
  return v !== null && String(v) === want;
}
