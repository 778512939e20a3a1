import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ScorecardRow, ScorecardRowSink } from '../../lifecycle/rows.js';
import { ArmSamples, isSample } from '../../lifecycle/samples.js';
import type { Logger } from '../../telemetry/log.js';
import { drain, DropLog, writerConnection } from './batch-writer.js';
import { pipelinePerNode, type RedisClient, type RedisTarget } from './client.js';
import type { RedisKeys } from './prefixes.js';
import { HOUR_MS, hourOf, MINUTE_MS, MINUTES_KEPT_MS, minuteOf, sampleField, taskValue } from './sample-fields.js';

type ScriptedRedis = RedisClient & {
  gwSamplesAdd(numKeys: number, ...args: string[]): Promise<number>;
};

export interface SampleWriterOptions {
  target: RedisTarget;
  keys: RedisKeys;
  /** how long an hour's samples are kept: as long as the request rows they come from */
  retentionMs: number;
  /** rows held while Redis is slow or away; past it new rows are dropped (counted) */
  maxBuffered: number;
  /** the skills a scorecard can be asked about: a row's other skills (the guardrails) are not kept */
  skills: ReadonlySet<string>;
  /** the id of the key's latest transition of the skill ('' when none): the samples' epoch */
  epochOf(keyId: string, skill: string): string;
  log: Logger;
  onDropped(count: number): void;
  onAppendFailed(): void;
}

/** one minute's pending samples of a tenant's skill: by totals field, the arm's samples */
interface PendingMinute {
  tenant: string;
  /** the minute's hash and its hour's, both added into */
  keys: [minute: string, hour: string];
  expireAt: [minute: number, hour: number];
  cells: Map<string, { keyId: string; epoch: string; arm: string; samples: ArmSamples }>;
}

interface Batch {
  uid: string;
  rows: number;
  minutes: Map<string, PendingMinute>;
}

/**
 * A batch goes out after this long, or at BATCH_ROWS rows. Redis's work per
 * batch follows the cells it touches (key, arm and minute), each merged once
 * however many requests it holds, so a longer period costs Redis less on a
 * busy deployment; a scorecard is at most this much behind.
 */
const FLUSH_MS = 1000;
const BATCH_ROWS = 5000;
/** how long a batch is remembered as added: far longer than any resend of it */
const SEEN_MS = 3_600_000;

const script = readFileSync(new URL('./samples-add.lua', import.meta.url), 'utf8');

/**
 * Keeps the scorecard's samples in Redis as requests finish, never on a
 * request's path: record() adds a row's samples (of the skills a scorecard
 * can be asked about) to the pending minute in memory, and a batch of them
 * goes out every FLUSH_MS, one script per tenant that adds it into the
 * tenant's minute and hour hashes (sample-fields.ts). Every replica adds into
 * the same hashes, so every replica reads the same scorecard. One batch is in
 * flight at a time; a batch that fails stays and is sent again, and the
 * script skips a batch it has added before. While Redis is away rows wait up
 * to `maxBuffered`; past that they are dropped, counted and logged.
 */
export class RedisSampleWriter implements ScorecardRowSink {
  private readonly redis: ScriptedRedis;
  private readonly idPrefix = randomBytes(6).toString('base64url');
  private seq = 0;
  private pending: Batch = this.newBatch();
  private sending: Batch | undefined;
  private inFlight: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly drops: DropLog;
  private closed = false;

  constructor(private readonly opts: SampleWriterOptions) {
    // a batch Redis has not answered in time is sent again: its seen marker makes that safe
    this.redis = writerConnection<ScriptedRedis>(opts.target, 'gw-scorecard-samples', 'gwSamplesAdd', script);
    this.drops = new DropLog(opts.log, 'scorecard samples dropped: Redis did not take them in time', opts.onDropped, () => this.buffered);
  }

  async start(): Promise<void> {
    await this.redis.connect();
  }

  /** rows recorded and not yet added in Redis */
  get buffered(): number {
    return this.pending.rows + (this.sending?.rows ?? 0);
  }

  record(row: ScorecardRow): void {
    if (this.closed) return;
    let sampled = false;
    for (const [skill, s] of Object.entries(row.skills)) {
      if (!isSample(this.opts.skills, skill, s)) continue;
      if (!sampled && this.buffered >= this.opts.maxBuffered) return this.drops.dropped(1);
      sampled = true;
      const minute = minuteOf(Date.parse(row.ts));
      const key = this.opts.keys.samples(row.tenant_id, skill, 'm', minute);
      let hash = this.pending.minutes.get(key);
      if (hash === undefined) this.pending.minutes.set(key, (hash = this.newMinute(row.tenant_id, skill, minute, key)));
      const epoch = this.opts.epochOf(row.key_id, skill);
      const field = sampleField({ op: 'c', keyId: row.key_id, epoch, arm: s.arm, item: '' });
      let cell = hash.cells.get(field);
      if (cell === undefined) hash.cells.set(field, (cell = { keyId: row.key_id, epoch, arm: s.arm, samples: new ArmSamples() }));
      cell.samples.addRow(row, s.outcome, s.detail, s.arm);
    }
    if (!sampled) return;
    this.pending.rows++;
    if (this.pending.rows >= BATCH_ROWS && this.inFlight === undefined) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS).unref();
  }

  /** sends the failed batch again, else what is pending; resolves when Redis answered (or did not) */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.inFlight) return this.inFlight;
    if (this.sending === undefined) {
      if (this.pending.rows === 0) return Promise.resolve();
      this.sending = this.pending;
      this.pending = this.newBatch();
    }
    const batch = this.sending;
    this.inFlight = this.send(batch).finally(() => {
      this.inFlight = undefined;
      if (this.buffered > 0 && !this.closed) this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS).unref();
    });
    return this.inFlight;
  }

  /** Sends what is held and closes the connection; gives up on what Redis does not take within `graceMs`. */
  async close(graceMs: number): Promise<void> {
    await drain(graceMs, FLUSH_MS, () => this.buffered, () => this.flush());
    this.closed = true;
    clearTimeout(this.timer);
    if (this.buffered > 0) this.drops.dropped(this.buffered);
    this.drops.report(true);
    this.redis.disconnect();
  }

  private newBatch(): Batch {
    return { uid: `${this.idPrefix}${(this.seq++).toString(36)}`, rows: 0, minutes: new Map() };
  }

  private newMinute(tenant: string, skill: string, minute: number, key: string): PendingMinute {
    const at = minute * MINUTE_MS;
    const hour = hourOf(at);
    return {
      tenant,
      keys: [key, this.opts.keys.samples(tenant, skill, 'h', hour)],
      expireAt: [at + MINUTE_MS + MINUTES_KEPT_MS, (hour + 1) * HOUR_MS + this.opts.retentionMs],
      cells: new Map(),
    };
  }

  private async send(batch: Batch): Promise<void> {
    const byTenant = new Map<string, PendingMinute[]>();
    for (const m of batch.minutes.values()) {
      const list = byTenant.get(m.tenant);
      if (list) list.push(m);
      else byTenant.set(m.tenant, [m]);
    }
    const calls = [...byTenant].map(([tenant, minutes]) => ({
      // one slot per call: every key carries the tenant's hash tag
      keys: [this.opts.keys.samplesSeen(tenant, batch.uid), ...minutes.flatMap((m) => m.keys)],
      args: [String(SEEN_MS), ...minutes.flatMap(minuteArgs)],
    }));
    const nodes = await pipelinePerNode(this.redis, calls, (c) => c.keys[0] as string, (pipeline, c) => (pipeline as unknown as ScriptedRedis).gwSamplesAdd(c.keys.length, ...c.keys, ...c.args));
    const failure = nodes.find((node) => node.failure !== undefined)?.failure;
    if (failure === undefined) this.sending = undefined;
    else {
      this.opts.onAppendFailed();
      this.opts.log.debug({ err: failure, rows: batch.rows }, 'scorecard samples not added; retrying');
    }
    this.drops.report(false);
  }
}

/** one minute's part of the script's arguments: the two expiries, count, then op, field, value triples */
function minuteArgs(m: PendingMinute): string[] {
  const ops: string[] = [];
  for (const [field, { keyId, epoch, arm, samples }] of m.cells) {
    ops.push('c', field, JSON.stringify(samples.totals));
    for (const [item, t] of samples.tasks) ops.push('t', sampleField({ op: 't', keyId, epoch, arm, item }), taskValue(t));
    for (const item of samples.sessions) ops.push('u', sampleField({ op: 'u', keyId, epoch, arm, item }), '1');
  }
  return [String(m.expireAt[0]), String(m.expireAt[1]), String(ops.length / 3), ...ops];
}
