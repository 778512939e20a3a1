import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { telemetryKeys } from '../../src/telemetry/keys.js';
import { createLogger } from '../../src/telemetry/log.js';
import { MARKER, WHOLE } from '../../src/telemetry/projections.js';
import type { RequestRow } from '../../src/telemetry/row.js';
import { StreamReader } from '../../src/telemetry/stream-reader.js';
import { StreamWriter } from '../../src/telemetry/stream-writer.js';
import { MAX_PENDING, type SumOutcome, UsageCompactor } from '../../src/telemetry/usage-compactor.js';
import type { UsageQuery } from '../../src/telemetry/usage.js';
import { dropRedisPrefix, keysMatching, newRedisPrefix, REDIS_URL, requireRedis, TEST_REDIS, testRedis } from '../helpers/gateway.js';
import { startRedisProxy } from '../helpers/redis-proxy.js';
import { DECISION, TENANT, usageRow } from '../helpers/usage-rows.js';
import { eventually } from '../helpers/wait.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** the writers' quiet delay: short, so a test waits little for the summing it polls for */
const SUM_DELAY_MS = 300;

const now = Date.now();
/** an hour of yesterday (UTC), so both it and its day are finished whatever the time of day */
const YESTERDAY = Math.floor(now / DAY) - 1;
const HOUR_OF_YESTERDAY = YESTERDAY * 24 + 5;
/** row `i` at `ts` (ms) */
const row = (i: number, ts: number, over: Partial<RequestRow> = {}) => usageRow(i, now, { ts: new Date(ts).toISOString(), ...over });

const BY_MODEL_TEAM: UsageQuery = { groupBy: ['model', 'team'], bucket: undefined, filters: {} };

/** requests and tokens in by model and team, summed from the rows */
function expected(rows: readonly RequestRow[]): string[] {
  const groups = new Map<string, [number, number]>();
  for (const r of rows) {
    const id = `${r.model}/${r.team}`;
    const g = groups.get(id) ?? [0, 0];
    groups.set(id, [g[0] + 1, g[1] + r.tokens_in]);
  }
  return [...groups].map(([id, [n, tokens]]) => `${id} ${n} ${tokens}`).sort();
}
const answered = (rows: ReadonlyArray<Record<string, unknown>>): string[] => rows.map((r) => `${r['model']}/${r['team']} ${r['requests']} ${r['tokens_in']}`).sort();

describe('usage summing queued by the writer', () => {
  let prefix: string;
  const writers: StreamWriter[] = [];
  const newWriter = async (target = TEST_REDIS, namespace = prefix, outcomes: SumOutcome[] = []) => {
    const w = new StreamWriter({
      target,
      prefix: namespace,
      retentionMs: 7 * DAY,
      maxBuffered: 10_000,
      log: createLogger('error'),
      onDropped: () => undefined,
      onAppended: () => undefined,
      onAppendFailed: () => undefined,
      sumDelayMs: SUM_DELAY_MS,
      onSumOutcome: (o) => outcomes.push(o),
    });
    await w.start();
    writers.push(w);
    return w;
  };
  const flushed = async (w: StreamWriter) => {
    while (w.buffered > 0) await w.flush();
  };
  const marker = async (period: 'hour' | 'day', n: number, namespace = prefix): Promise<string | null> => {
    const redis = testRedis();
    try {
      return await redis.get(telemetryKeys(namespace, TENANT).projection(period, n, MARKER));
    } finally {
      redis.disconnect();
    }
  };
  const whole = (period: 'hour' | 'day', n: number, namespace = prefix) => async () => (await marker(period, n, namespace)) === WHOLE;

  before(async () => {
    await requireRedis();
    prefix = newRedisPrefix();
  });
  after(async () => {
    for (const w of writers) await w.close(1000);
    await dropRedisPrefix(prefix);
  });

  it('rows written into a finished hour are summed into its projections, and its day into its own, with no usage read; answers stay exact', async () => {
    const writer = await newWriter();
    const rows = Array.from({ length: 40 }, (_, i) => row(i, HOUR_OF_YESTERDAY * HOUR + i * 60_000));
    for (const r of rows) writer.append(r, DECISION);
    await flushed(writer);
    await eventually(whole('hour', HOUR_OF_YESTERDAY), 'the hour summed by the writer');
    await eventually(whole('day', YESTERDAY), 'the day summed by the writer');

    const reader = new StreamReader({ target: TEST_REDIS, prefix, retentionMs: 7 * DAY, boundMs: 10_000 });
    await reader.start();
    try {
      assert.deepEqual(answered(await reader.usage(TENANT, BY_MODEL_TEAM, 7 * DAY, 1000)), expected(rows), 'from the projections');
      // a late row: the period is read from every combination, then summed again after the quiet delay
      const late = [row(100, HOUR_OF_YESTERDAY * HOUR + 59 * 60_000, { team: 'late' })];
      for (const r of late) writer.append(r, DECISION);
      await flushed(writer);
      assert.deepEqual(answered(await reader.usage(TENANT, BY_MODEL_TEAM, 7 * DAY, 1000)), expected([...rows, ...late]), 'after a late row');
      await eventually(whole('hour', HOUR_OF_YESTERDAY), 'the hour summed again');
      await eventually(whole('day', YESTERDAY), 'the day summed again');
      assert.deepEqual(answered(await reader.usage(TENANT, BY_MODEL_TEAM, 7 * DAY, 1000)), expected([...rows, ...late]), 'summed again');
    } finally {
      reader.close();
    }
  });

  it('two writers adding rows to the same finished hour sum it (and its day) once between them', async () => {
    const own = newRedisPrefix();
    const outcomes: SumOutcome[] = [];
    const [a, b] = [await newWriter(TEST_REDIS, own, outcomes), await newWriter(TEST_REDIS, own, outcomes)] as [StreamWriter, StreamWriter];
    const hour = HOUR_OF_YESTERDAY + 3;
    try {
      for (let i = 0; i < 20; i++) (i % 2 === 0 ? a : b).append(row(200 + i, hour * HOUR + i * 60_000), DECISION);
      // both batches go out together, well within the quiet delay of either
      await Promise.all([flushed(a), flushed(b)]);
      await eventually(whole('hour', hour, own), 'the hour summed');
      await eventually(whole('day', YESTERDAY, own), 'the day summed');
      await Promise.all([a.summed(), b.summed()]);
      assert.deepEqual(outcomes, ['summed', 'summed'], 'one hour and one day, each summed by one writer');
      assert.equal(a.pendingSums + b.pendingSums, 0, 'the writer that found the period claimed dropped it');
    } finally {
      const plain = new Redis(REDIS_URL);
      for (const key of await keysMatching(plain, `${own}*`)) await plain.del(key);
      plain.disconnect();
    }
  });

  it('a summing Redis does not answer is counted as failed and tried again', async () => {
    const proxy = await startRedisProxy();
    const own = newRedisPrefix();
    const outcomes: SumOutcome[] = [];
    const writer = await newWriter(proxy.url, own, outcomes);
    try {
      writer.append(row(300, HOUR_OF_YESTERDAY * HOUR), DECISION);
      await flushed(writer);
      // the append went through (the summing is due a quiet delay later: no timer runs before this line); the
      // claim, the next script, waits in transit past the writer's command timeout and reaches Redis on resume
      proxy.hangOnCommand('eval', 'evalsha');
      await eventually(() => outcomes.includes('failed'), 'a try to fail');
      proxy.resume();
      await eventually(whole('hour', HOUR_OF_YESTERDAY, own), 'the hour summed on a later try');
      assert.equal(await marker('hour', HOUR_OF_YESTERDAY + 1, own), null, 'only the hours with rows');
    } finally {
      await writer.close(1000);
      await proxy.close();
      const plain = new Redis(REDIS_URL);
      for (const key of await keysMatching(plain, `${own}*`)) await plain.del(key);
      plain.disconnect();
    }
  });

  it('a replica queues at most MAX_PENDING periods: past that a period is counted as overflow and left to reads; queuing one again is no new entry', () => {
    const redis = new Redis(REDIS_URL, { lazyConnect: true });
    const outcomes: SumOutcome[] = [];
    const compactor = new UsageCompactor(redis, newRedisPrefix(), 7 * DAY, { retryMs: SUM_DELAY_MS, onOutcome: (o) => outcomes.push(o) });
    try {
      // due in a day: nothing is summed (nor is Redis asked) while the test runs
      const later = Date.now() + DAY;
      for (let n = 0; n < MAX_PENDING; n++) compactor.compact(TENANT, 'hour', n, later);
      compactor.compact(TENANT, 'hour', 0, later + 1);
      assert.equal(compactor.pending, MAX_PENDING);
      assert.deepEqual(outcomes, []);
      compactor.compact(TENANT, 'hour', MAX_PENDING, later);
      assert.equal(compactor.pending, MAX_PENDING);
      assert.deepEqual(outcomes, ['overflow']);
    } finally {
      compactor.close();
      redis.disconnect();
    }
  });
});
