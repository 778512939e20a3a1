import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { drain, DropLog, writerConnection } from '../stores/redis/batch-writer.js';
import { pipelinePerNode, type RedisClient, type RedisTarget } from '../stores/redis/client.js';
import type { Logger } from './log.js';
import { HOUR_MS, PERIOD_MS, periodOf, telemetryKeys } from './keys.js';
import { MARKER } from './projections.js';
import { MINUTE_ROLLUP_KEEP_MS } from './rollup-plan.js';
import type { DecisionRecord, RequestRow } from './row.js';
import { encodeEntry } from './stream-codec.js';
import { dimensionTuple, rowCounters } from './usage.js';
import { type SumOutcome, UsageCompactor } from './usage-compactor.js';

interface AppendCommands {
  gwTelemetryAppend(numKeys: number, ...args: string[]): unknown;
}
type ScriptedRedis = RedisClient & AppendCommands;

/** One tenant's rows of a batch as the append script takes them. */
interface Append {
  keys: string[];
  args: string[];
}

/** One row waiting for Redis; its record for the script is made once, when it is first sent. */
interface PendingRow {
  row: RequestRow;
  decision: DecisionRecord;
  /** uid, request_id, dimension tuple, "cost(nano-USD) tokens_in tokens_out cache_hits", row, decision, joined by FIELD_SEP */
  record?: string;
}

/**
 * Separates the fields of the rows' records in the script's one argument of
 * rows: one argument per call, not six per row, which the client framed one
 * by one at about 3 µs a row. No field can hold it: JSON escapes control
 * characters, ids are plain, and the dimension tuple has none (usage.ts).
 */
const FIELD_SEP = '\x1e';

export interface StreamWriterOptions {
  target: RedisTarget;
  prefix: string;
  retentionMs: number;
  /** rows held while Redis is slow or away; past it new rows are dropped (counted) */
  maxBuffered: number;
  log: Logger;
  /** a row that could not be kept */
  onDropped(count: number): void;
  onAppended(count: number): void;
  onAppendFailed(): void;
  /** a finished hour or day this writer added rows to is summed into projections this long after the later of its end and its last row (ms) */
  sumDelayMs: number;
  onSumOutcome?(outcome: SumOutcome): void;
}

/** a batch goes out at this many rows, or after FLUSH_MS */
export const BATCH_ROWS = 200;
const FLUSH_MS = 100;
/** on a cluster, a batch no replica has confirmed within this is sent again (client.ts, replicaHolds) */
const REPLICA_WAIT_MS = 1000;
/** a row id is remembered this long past its hour, longer than any retry of its batch */
const REMEMBER_MS = 2 * HOUR_MS;

const script = readFileSync(new URL('./telemetry-append.lua', import.meta.url), 'utf8');

/**
 * Appends rows to the tenants' Redis streams in batches, on a connection of
 * its own, never on a request's path: `append` only queues, and a row is
 * encoded when its batch is first sent. One batch is in
 * flight at a time; a batch that fails or times out stays at the head of the
 * queue and is sent again, and the append script skips rows it has seen, so a
 * re-delivery never counts twice. While Redis is slow or away rows wait in a
 * bounded buffer; a row that does not fit is dropped, counted and logged once
 * per interval.
 *
 * Each tenant's rows are one script on the tenant's keys (one hash slot on a
 * cluster); the scripts of a batch go out in one pipeline per node. On a
 * cluster a batch is done only once a replica of each master it wrote to has
 * it (WAIT 1 ends each pipeline): a master that fails before that may take
 * the rows with it, so the batch is sent again, and what the promoted replica
 * already had is skipped.
 *
 * Every hour and day a batch added rows to is queued for summing into
 * projections (usage-compactor.ts) once it is finished and has had no row for
 * `sumDelayMs`, so usage reads find finished periods summed without having
 * started it themselves.
 */
export class StreamWriter {
  private readonly redis: ScriptedRedis;
  private readonly queue: PendingRow[] = [];
  private readonly idPrefix = randomBytes(6).toString('base64url');
  private seq = 0;
  private inFlight: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly drops: DropLog;
  private readonly summing: UsageCompactor;
  private closed = false;

  constructor(private readonly opts: StreamWriterOptions) {
    // a batch Redis has not answered in time is sent again: the row ids make that safe
    this.redis = writerConnection<ScriptedRedis>(opts.target, `${opts.prefix}telemetry-writer`, 'gwTelemetryAppend', script);
    this.drops = new DropLog(opts.log, 'telemetry rows dropped: Redis did not take them in time', opts.onDropped, () => this.queue.length);
    this.summing = new UsageCompactor(this.redis, opts.prefix, opts.retentionMs, { retryMs: opts.sumDelayMs, onOutcome: opts.onSumOutcome });
  }

  async start(): Promise<void> {
    await this.redis.connect();
  }

  get buffered(): number {
    return this.queue.length;
  }

  /** hours and days queued for summing into projections */
  get pendingSums(): number {
    return this.summing.pending;
  }

  /** resolves when the periods queued for summing that are due within the quiet delay are summed (or given up) */
  summed(): Promise<void> {
    return this.summing.settled(Date.now() + this.opts.sumDelayMs);
  }

  append(row: RequestRow, decision: DecisionRecord): void {
    if (this.closed) return;
    if (this.queue.length >= this.opts.maxBuffered) {
      this.drops.dropped(1);
      return;
    }
    this.queue.push({ row, decision });
    // a full buffer is sent at once: waiting for the timer could only drop rows Redis would take
    if (this.queue.length >= Math.min(BATCH_ROWS, this.opts.maxBuffered) && this.inFlight === undefined) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), FLUSH_MS).unref();
  }

  /** the row's record for the script, made on its first send and kept for a retry (its uid must not change) */
  private recordOf(p: PendingRow): string {
    if (p.record !== undefined) return p.record;
    const { row } = p;
    const c = rowCounters(row);
    const [, values, , decision] = encodeEntry(row, p.decision);
    const uid = `${this.idPrefix}${(this.seq++).toString(36)}`;
    p.record = [uid, row.request_id, dimensionTuple(row), `${c.costNano} ${c.tokensIn} ${c.tokensOut} ${c.cacheHits}`, values, decision].join(FIELD_SEP);
    return p.record;
  }

  /** sends what is queued, one batch at a time; resolves when the queue is empty or a batch failed */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.inFlight) return this.inFlight;
    if (this.queue.length === 0) return Promise.resolve();
    this.inFlight = this.sendBatch().finally(() => {
      this.inFlight = undefined;
      if (this.queue.length > 0 && !this.closed) this.timer ??= setTimeout(() => this.flush(), FLUSH_MS).unref();
    });
    return this.inFlight;
  }

  /** Sends queued rows and closes the connection; gives up on what Redis does not take within `graceMs`. */
  async close(graceMs: number): Promise<void> {
    await drain(graceMs, FLUSH_MS, () => this.queue.length, () => this.flush());
    this.closed = true;
    clearTimeout(this.timer);
    this.summing.close();
    if (this.queue.length > 0) this.drops.dropped(this.queue.splice(0).length);
    this.drops.report(true);
    this.redis.disconnect();
  }

  private async sendBatch(): Promise<void> {
    const batch = this.queue.slice(0, BATCH_ROWS);
    // one script call per tenant and UTC minute: its keys once, its rows' records in one argument
    const groups = new Map<string, { tenant: string; at: number; records: string[] }>();
    for (const p of batch) {
      const at = Date.parse(p.row.ts);
      const id = `${periodOf('minute', at)} ${p.row.tenant_id}`;
      let g = groups.get(id);
      if (!g) groups.set(id, (g = { tenant: p.row.tenant_id, at, records: [] }));
      g.records.push(this.recordOf(p));
    }
    const appends: Append[] = [...groups.values()].map(({ tenant, at, records }) => {
      const keys = telemetryKeys(this.opts.prefix, tenant);
      const [minute, hour, day] = [periodOf('minute', at), periodOf('hour', at), periodOf('day', at)];
      return {
        // every key carries the tenant's hash tag: one slot per call
        keys: [
          keys.rows,
          keys.seen(hour),
          keys.index(hour),
          keys.usage('minute', minute),
          keys.usage('hour', hour),
          keys.usage('day', day),
          keys.projection('hour', hour, MARKER),
          keys.projection('day', day, MARKER),
        ],
        args: [
          String(this.opts.retentionMs),
          String(REMEMBER_MS),
          String(MINUTE_ROLLUP_KEEP_MS),
          String((minute + 1) * PERIOD_MS.minute),
          String((hour + 1) * PERIOD_MS.hour),
          String((day + 1) * PERIOD_MS.day),
          records.join(FIELD_SEP),
        ],
      };
    });
    const nodes = await pipelinePerNode(
      this.redis,
      appends,
      (a) => a.keys[0] as string,
      (pipeline, a) => (pipeline as unknown as AppendCommands).gwTelemetryAppend(a.keys.length, ...a.keys, ...a.args),
      REPLICA_WAIT_MS,
    );
    // a row counts once, when first appended: a batch sent again skips it
    this.opts.onAppended(nodes.reduce((n, node) => node.replies.reduce((m, [err, added]) => (err ? m : m + Number(added)), n), 0));
    const failure = nodes.find((node) => node.failure !== undefined)?.failure;
    if (failure === undefined) {
      this.queue.splice(0, batch.length);
      this.queueSums(groups.values());
    } else {
      this.opts.onAppendFailed();
      this.opts.log.debug({ err: failure, rows: batch.length }, 'telemetry batch not appended; retrying');
    }
    this.drops.report(false);
  }

  /** queues the hours and days of an appended batch for summing, each due the quiet delay after the later of its end and now */
  private queueSums(groups: Iterable<{ tenant: string; at: number }>): void {
    const now = Date.now();
    for (const { tenant, at } of groups) {
      for (const period of ['hour', 'day'] as const) {
        const n = periodOf(period, at);
        this.summing.compact(tenant, period, n, Math.max((n + 1) * PERIOD_MS[period], now) + this.opts.sumDelayMs);
      }
    }
  }
}
