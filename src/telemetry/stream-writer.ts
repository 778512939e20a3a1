import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import type { Logger } from './log.js';
import { HOUR_MS, hourOf, telemetryKeys } from './keys.js';
import type { DecisionRecord, RequestRow } from './row.js';
import { encodeEntry } from './stream-codec.js';
import { dimensionTuple, rowCounters } from './usage.js';

interface ScriptedRedis extends Redis {
  gwTelemetryAppend(numKeys: number, ...args: string[]): Promise<number>;
}

/** One row waiting for Redis, already in the script's argument form. */
interface PendingRow {
  tenant: string;
  keys: [string, string, string];
  args: string[];
}

export interface StreamWriterOptions {
  url: string;
  prefix: string;
  retentionMs: number;
  /** rows held while Redis is slow or away; past it new rows are dropped (counted) */
  maxBuffered: number;
  log: Logger;
  /** a row that could not be kept */
  onDropped(count: number): void;
  onAppended(count: number): void;
  onAppendFailed(): void;
}

/** a batch goes out at this many rows, or after FLUSH_MS */
export const BATCH_ROWS = 200;
const FLUSH_MS = 100;
/** a batch Redis has not answered in this long is retried (the row ids make the retry safe) */
const COMMAND_TIMEOUT_MS = 2000;
/** a row id is remembered this long past its hour, longer than any retry of its batch */
const REMEMBER_MS = 2 * HOUR_MS;
/** dropped rows are logged at most once per interval */
const DROP_LOG_MS = 10_000;

const script = readFileSync(new URL('./telemetry-append.lua', import.meta.url), 'utf8');

/**
 * Appends rows to the tenants' Redis streams in batches, on a connection of
 * its own, never on a request's path: `append` only queues. One batch is in
 * flight at a time; a batch that fails or times out stays at the head of the
 * queue and is sent again, and the append script skips rows it has seen, so a
 * re-delivery never counts twice. While Redis is slow or away rows wait in a
 * bounded buffer; a row that does not fit is dropped, counted and logged once
 * per interval.
 */
export class StreamWriter {
  private readonly redis: ScriptedRedis;
  private readonly queue: PendingRow[] = [];
  private readonly idPrefix = randomBytes(6).toString('base64url');
  private seq = 0;
  private inFlight: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private droppedSinceLog = 0;
  private lastDropLog = 0;
  private closed = false;

  constructor(private readonly opts: StreamWriterOptions) {
    this.redis = new Redis(opts.url, {
      lazyConnect: true,
      connectionName: `${opts.prefix}telemetry-writer`,
      commandTimeout: COMMAND_TIMEOUT_MS,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => 500,
    }) as ScriptedRedis;
    this.redis.defineCommand('gwTelemetryAppend', { lua: script });
    // reconnects are retried by the strategy above; errors surface through the appends
    this.redis.on('error', () => undefined);
  }

  async start(): Promise<void> {
    await this.redis.connect();
  }

  get buffered(): number {
    return this.queue.length;
  }

  append(row: RequestRow, decision: DecisionRecord): void {
    if (this.closed) return;
    if (this.queue.length >= this.opts.maxBuffered) {
      this.dropped(1);
      return;
    }
    this.queue.push(this.pending(row, decision));
    if (this.queue.length >= BATCH_ROWS && this.inFlight === undefined) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), FLUSH_MS).unref();
  }

  private pending(row: RequestRow, decision: DecisionRecord): PendingRow {
    const at = Date.parse(row.ts);
    const hour = hourOf(at);
    const keys = telemetryKeys(this.opts.prefix, row.tenant_id);
    const c = rowCounters(row);
    const fields = encodeEntry(row, decision);
    const uid = `${this.idPrefix}${(this.seq++).toString(36)}`;
    return {
      tenant: row.tenant_id,
      keys: [keys.seen(hour), keys.index(hour), keys.usage(hour)],
      args: [uid, String((hour + 1) * HOUR_MS), row.request_id, dimensionTuple(row), String(c.costNano), String(c.tokensIn), String(c.tokensOut), String(c.cacheHits), String(fields.length), ...fields],
    };
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
    const deadline = Date.now() + graceMs;
    while (this.queue.length > 0 && Date.now() < deadline) {
      await this.flush();
      if (this.queue.length > 0) await new Promise((r) => setTimeout(r, FLUSH_MS));
    }
    this.closed = true;
    clearTimeout(this.timer);
    if (this.queue.length > 0) this.dropped(this.queue.splice(0).length);
    this.logDrops(true);
    this.redis.disconnect();
  }

  private async sendBatch(): Promise<void> {
    const batch = this.queue.slice(0, BATCH_ROWS);
    const byTenant = new Map<string, PendingRow[]>();
    for (const p of batch) {
      const rows = byTenant.get(p.tenant);
      if (rows) rows.push(p);
      else byTenant.set(p.tenant, [p]);
    }
    const pipeline = this.redis.pipeline();
    for (const [tenant, rows] of byTenant) {
      const keys = [telemetryKeys(this.opts.prefix, tenant).rows, ...rows.flatMap((r) => r.keys)];
      const args = [String(this.opts.retentionMs), String(REMEMBER_MS), ...rows.flatMap((r) => r.args)];
      (pipeline as unknown as ScriptedRedis).gwTelemetryAppend(keys.length, ...keys, ...args);
    }
    try {
      const results = (await pipeline.exec()) ?? [];
      const failed = results.find(([err]) => err);
      if (failed) throw failed[0];
      this.queue.splice(0, batch.length);
      this.opts.onAppended(results.reduce((n, [, added]) => n + Number(added), 0));
    } catch (err) {
      this.opts.onAppendFailed();
      this.opts.log.debug({ err, rows: batch.length }, 'telemetry batch not appended; retrying');
    }
    this.logDrops(false);
  }

  private dropped(count: number): void {
    this.droppedSinceLog += count;
    this.opts.onDropped(count);
    this.logDrops(false);
  }

  private logDrops(force: boolean): void {
    const now = Date.now();
    if (this.droppedSinceLog === 0 || (!force && now - this.lastDropLog < DROP_LOG_MS)) return;
    this.opts.log.warn({ dropped: this.droppedSinceLog, buffered: this.queue.length }, 'telemetry rows dropped: Redis did not take them in time');
    this.droppedSinceLog = 0;
    this.lastDropLog = now;
  }
}
