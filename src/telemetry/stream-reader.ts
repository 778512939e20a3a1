import { Redis } from 'ioredis';
import { GatewayError } from '../errors.js';
import { HOUR_MS, hourOf, telemetryKeys } from './keys.js';
import type { DecisionRecord, RequestRow } from './row.js';
import { decodeEntry, fieldValue } from './stream-codec.js';
import { dimensionTuple, parseCounters, rowCounters, splitTuple, UsageAggregator, type UsageQuery, type UsageRow } from './usage.js';

export interface StreamReaderOptions {
  url: string;
  prefix: string;
  retentionMs: number;
  /** a read that takes longer is 504 store_timeout */
  boundMs: number;
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

/** entries read per XREVRANGE page of the durable list */
const PAGE = 500;
/** windows up to this long are summed from raw rows (exact to the millisecond); longer ones from hourly rollups */
const RAW_USAGE_MAX_MS = HOUR_MS;

type Entry = [id: string, fields: string[]];

/**
 * Reads the tenants' telemetry from Redis on its own connection: the durable
 * list (newest first, by time-bounded stream ids), a single request through
 * the per-hour id index, and usage from the hourly rollups. Every read is
 * bounded; past the bound it is 504 store_timeout with its remedy.
 */
export class StreamReader {
  private readonly redis: Redis;

  constructor(private readonly opts: StreamReaderOptions) {
    this.redis = new Redis(opts.url, {
      lazyConnect: true,
      connectionName: `${opts.prefix}telemetry-reader`,
      commandTimeout: opts.boundMs,
      maxRetriesPerRequest: 1,
    });
    this.redis.on('error', () => undefined);
  }

  async start(): Promise<void> {
    await this.redis.connect();
  }

  close(): void {
    this.redis.disconnect();
  }

  async list(tenant: string, q: ListQuery): Promise<StoredRequest[]> {
    return this.bounded('a narrower window or more filters', async (deadline) => {
      const key = telemetryKeys(this.opts.prefix, tenant).rows;
      const out: StoredRequest[] = [];
      let end = '+';
      const start = `${Math.max(0, q.startMs)}-0`;
      // unfiltered, the first page is all that is needed (unless rows arrived late)
      const count = q.filters.length === 0 ? Math.min(PAGE, q.limit) : PAGE;
      for (;;) {
        const page = (await this.redis.xrevrange(key, end, start, 'COUNT', count)) as Entry[];
        for (const [, fields] of page) {
          if (!q.filters.every(([col, v]) => fieldValue(fields, col) === v)) continue;
          const e = decodeEntry(fields, q.withDecision);
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
      const found = ((await pipeline.exec()) ?? []).map(([, id]) => id).find((id): id is string => typeof id === 'string');
      if (found === undefined) return undefined;
      const [entry] = (await this.redis.xrange(keys.rows, found, found)) as Entry[];
      return entry ? decodeEntry(entry[1], true) : undefined;
    });
  }

  /** Usage of the window ending now; a window over an hour reads whole UTC hours from the rollups, never raw rows. */
  async usage(tenant: string, query: UsageQuery, windowMs: number, limit: number): Promise<UsageRow[]> {
    return this.bounded('a shorter window or fewer dimensions', async (deadline) => {
      const agg = new UsageAggregator(query);
      const now = Date.now();
      if (windowMs <= RAW_USAGE_MAX_MS) {
        for (const { row } of await this.list(tenant, { startMs: now - windowMs, limit: Number.MAX_SAFE_INTEGER, filters: [], withDecision: false })) {
          agg.add(splitTuple(dimensionTuple(row)), Date.parse(row.ts), rowCounters(row));
        }
        return agg.rows(limit);
      }
      const keys = telemetryKeys(this.opts.prefix, tenant);
      const last = hourOf(now);
      const first = hourOf(now - windowMs);
      const pipeline = this.redis.pipeline();
      for (let h = first; h <= last; h++) pipeline.hgetall(keys.usage(h));
      const results = (await pipeline.exec()) ?? [];
      deadline();
      results.forEach(([err, hash], i) => {
        if (err) throw err;
        addRollup(agg, (first + i) * HOUR_MS, hash as Record<string, string>);
      });
      return agg.rows(limit);
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

/** one hour's rollup hash into the aggregator */
function addRollup(agg: UsageAggregator, hourMs: number, hash: Record<string, string>): void {
  for (const [tuple, value] of Object.entries(hash)) agg.add(splitTuple(tuple), hourMs, parseCounters(value));
}
