import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { telemetryKeys } from '../../src/telemetry/keys.js';
import { createLogger } from '../../src/telemetry/log.js';
import { MARKER, WHOLE } from '../../src/telemetry/projections.js';
import type { RequestRow } from '../../src/telemetry/row.js';
import { StreamReader } from '../../src/telemetry/stream-reader.js';
import { StreamWriter } from '../../src/telemetry/stream-writer.js';
import { bucketStart, type Dimension, toNano, USAGE_DIMENSIONS, type UsageQuery, type UsageRow } from '../../src/telemetry/usage.js';
import { dropRedisPrefix, keysMatching, newRedisPrefix, REDIS_URL, requireRedis, TEST_REDIS, testRedis } from '../helpers/gateway.js';
import { startRedisProxy } from '../helpers/redis-proxy.js';
import { DECISION, TENANT, usageRow as row } from '../helpers/usage-rows.js';
import { eventually } from '../helpers/wait.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** the answer a usage read must give, summed from the rows themselves */
function expected(rows: readonly RequestRow[], query: UsageQuery, sinceMs: number): string[] {
  const value = (r: RequestRow, d: Dimension) => {
    const v = r[USAGE_DIMENSIONS[d]];
    return v === null ? null : String(v);
  };
  const groups = new Map<string, UsageRow>();
  for (const r of rows) {
    const at = Date.parse(r.ts);
    if (at < sinceMs) continue;
    if (!Object.entries(query.filters).every(([d, v]) => value(r, d as Dimension) === v)) continue;
    const g: UsageRow = {};
    if (query.bucket) g['bucket_start'] = new Date(bucketStart(at, query.bucket)).toISOString();
    for (const d of query.groupBy) g[d] = value(r, d);
    const id = JSON.stringify(g);
    const sum = groups.get(id) ?? { ...g, requests: 0, cost_nano: 0, tokens_in: 0, tokens_out: 0, cache_hits: 0 };
    sum['requests'] = Number(sum['requests']) + 1;
    sum['cost_nano'] = Number(sum['cost_nano']) + toNano(r.cost_usd);
    sum['tokens_in'] = Number(sum['tokens_in']) + r.tokens_in;
    sum['tokens_out'] = Number(sum['tokens_out']) + r.tokens_out;
    sum['cache_hits'] = Number(sum['cache_hits']) + (r.cache_tier === null ? 0 : 1);
    groups.set(id, sum);
  }
  return canonical([...groups.values()].map(({ cost_nano, ...g }) => ({ ...g, cost_usd: Number(cost_nano) / 1e9 })));
}

/** usage rows in one order, their columns too */
const canonical = (rows: UsageRow[]): string[] => rows.map((r) => JSON.stringify(Object.fromEntries(Object.entries(r).sort(([a], [b]) => a.localeCompare(b))))).sort();

const QUERIES: UsageQuery[] = [
  { groupBy: ['model', 'team'], bucket: undefined, filters: {} },
  { groupBy: ['model', 'team'], bucket: 'day', filters: {} },
  { groupBy: ['model', 'team'], bucket: 'hour', filters: {} },
  { groupBy: ['team', 'project'], bucket: 'week', filters: {} },
  { groupBy: ['key'], bucket: undefined, filters: {} },
  { groupBy: ['cache_tier'], bucket: 'day', filters: {} },
  { groupBy: ['feature'], bucket: undefined, filters: { team: 'quant' } },
  { groupBy: ['provider'], bucket: 'hour', filters: { provider: 'openai' } },
  { groupBy: [], bucket: undefined, filters: { cost_centre: 'cc-1', project: 'p2' } },
  // three dimensions: every combination is read
  { groupBy: ['model', 'team', 'project'], bucket: 'day', filters: {} },
  { groupBy: ['status'], bucket: undefined, filters: { team: 'ops', key: 'key_b' } },
];

describe('usage read from projections, against the rows', () => {
  let prefix: string;
  let writer: StreamWriter;
  let reader: StreamReader;
  const now = Date.now();
  const rows = Array.from({ length: 600 }, (_, i) => row(i, now));
  /** every row appended so far */
  const all = [...rows];
  const settled = async (w: StreamWriter) => {
    while (w.buffered > 0) await w.flush();
  };
  // summing here is started by reads: the writer's own (usage-summing.test.ts) waits an hour
  const newWriter = async (target = TEST_REDIS, namespace = prefix) => {
    const w = new StreamWriter({ target, prefix: namespace, retentionMs: 7 * DAY, maxBuffered: 10_000, log: createLogger('error'), onDropped: () => undefined, onAppended: () => undefined, onAppendFailed: () => undefined, sumDelayMs: HOUR });
    await w.start();
    return w;
  };
  const usage = (query: UsageQuery, windowMs: number) => reader.usage(TENANT, query, windowMs, 100_000);

  before(async () => {
    await requireRedis();
    prefix = newRedisPrefix();
    writer = await newWriter();
    reader = new StreamReader({ target: TEST_REDIS, prefix, retentionMs: 7 * DAY, boundMs: 10_000 });
    await reader.start();
    for (const r of rows) writer.append(r, DECISION);
    await settled(writer);
  });
  after(async () => {
    await writer.close(1000);
    reader.close();
    await dropRedisPrefix(prefix);
  });

  /** every query over 7 days and 24 hours against the rows */
  const allExact = async (what: string) => {
    for (const [windowMs, since] of [
      [7 * DAY, 0],
      [DAY, now - DAY],
    ] as const) {
      for (const query of QUERIES) {
        const want = expected(all, query, since);
        assert.ok(want.length > 0, JSON.stringify(query));
        assert.deepEqual(canonical(await usage(query, windowMs)), want, `${what}: ${windowMs / HOUR}h ${JSON.stringify(query)}`);
      }
    }
  };
  /** the periods summed into projections so far */
  const summed = async (): Promise<string[]> => {
    const redis = testRedis();
    try {
      const tenantKeys = telemetryKeys(prefix, TENANT).rows.replace(/rows$/, '');
      const markers = await keysMatching(redis, `${tenantKeys}*:${MARKER}`);
      const values = await Promise.all(markers.map((k) => redis.get(k)));
      return markers.filter((_, i) => values[i] === WHOLE);
    } finally {
      redis.disconnect();
    }
  };

  it('groupings, filters and buckets over 7 days and 24 hours sum to exactly what the rows do, before and after the periods are summed', async () => {
    assert.deepEqual(await summed(), []);
    await allExact('from every combination');
    await reader.compactions();
    const hours = new Set(rows.map((r) => Math.floor(Date.parse(r.ts) / HOUR)).filter((h) => (h + 1) * HOUR + 60_000 <= now));
    assert.ok((await summed()).length >= hours.size, 'every finished hour with rows was summed');
    await allExact('from projections');
  });

  it('a query on two dimensions is answered from the projections alone; one on three from every combination', async () => {
    const redis = testRedis();
    const saved = new Map<string, Record<string, string>>();
    try {
      // the rollups by every dimension of the summed periods, gone
      for (const marker of await summed()) {
        const key = marker.replace(/:!$/, '');
        const cells = await redis.hgetall(key);
        if (Object.keys(cells).length === 0) continue;
        saved.set(key, cells);
        await redis.del(key);
      }
      assert.ok(saved.size > 0);
      const two: UsageQuery = { groupBy: ['model'], bucket: 'day', filters: { team: 'quant' } };
      assert.deepEqual(canonical(await usage(two, 7 * DAY)), expected(all, two, 0));
      const three: UsageQuery = { groupBy: ['model', 'team', 'key'], bucket: undefined, filters: {} };
      const partial = await usage(three, 7 * DAY);
      assert.ok(partial.reduce((n, r) => n + Number(r['requests']), 0) < all.length, 'three dimensions are read from every combination');
    } finally {
      for (const [key, cells] of saved) await redis.hset(key, cells);
      redis.disconnect();
    }
  });

  it('a re-delivered batch, partly appended before, counts each row once', async () => {
    // the proxy stands in front of the one-node test Redis: this case has a namespace and reader of its own there
    const proxy = await startRedisProxy();
    const own = newRedisPrefix();
    const slow = await newWriter(proxy.url, own);
    const direct = new StreamReader({ target: REDIS_URL, prefix: own, retentionMs: 7 * DAY, boundMs: 10_000 });
    await direct.start();
    try {
      const at = new Date(now - 5 * 60_000).toISOString();
      const again = Array.from({ length: 3 }, (_, i) => row(10_000 + i, now, { ts: at, project: 'again' }));
      proxy.hangOnCommand('eval', 'evalsha');
      slow.append(again[0] as RequestRow, DECISION);
      // the first row's call waits in transit past the writer's timeout: it reaches Redis on resume, then the writer sends all three
      await slow.flush();
      for (const r of again.slice(1)) slow.append(r, DECISION);
      proxy.resume();
      await eventually(async () => {
        await slow.flush();
        return slow.buffered === 0;
      }, 'the batch to be taken');
      await direct.usage(TENANT, { groupBy: ['project'], bucket: 'hour', filters: {} }, 7 * DAY, 1000);
      await direct.compactions();
      const read = (query: UsageQuery, windowMs: number) => direct.usage(TENANT, query, windowMs, 1000);
      for (const windowMs of [HOUR, DAY, 7 * DAY]) {
        const found = await read({ groupBy: ['project'], bucket: undefined, filters: {} }, windowMs);
        assert.deepEqual(found.map((r) => [r['project'], r['requests']]), [['again', 3]], `${windowMs / HOUR}h`);
        const full = await read({ groupBy: ['project', 'model', 'team'], bucket: 'hour', filters: {} }, windowMs);
        assert.equal(full.reduce((n, r) => n + Number(r['requests']), 0), 3);
      }
      const listed = await direct.list(TENANT, { startMs: now - HOUR, limit: 100, filters: [], withDecision: false });
      assert.deepEqual(listed.map((e) => e.row.request_id).sort(), again.map((r) => r.request_id).sort());
    } finally {
      await slow.close(1000);
      direct.close();
      await proxy.close();
      const plain = new Redis(REDIS_URL);
      for (const key of await keysMatching(plain, `${own}*`)) await plain.del(key);
      plain.disconnect();
    }
  });

  it('a late row in a summed hour and day is counted: the period is read from every combination until summed again', async () => {
    const redis = testRedis();
    const keys = telemetryKeys(prefix, TENANT);
    // the row 27 hours ago: yesterday's or the day before's, both finished or today's first hours
    const at = now - 27 * HOUR;
    const [hour, day] = [Math.floor(at / HOUR), Math.floor(at / DAY)];
    try {
      await reader.compactions();
      assert.equal(await redis.get(keys.projection('hour', hour, MARKER)), WHOLE);
      const late = Array.from({ length: 4 }, (_, i) => row(20_000 + i, now, { ts: new Date(at).toISOString(), team: 'late' }));
      for (const r of late) writer.append(r, DECISION);
      all.push(...late);
      await settled(writer);
      assert.equal(await redis.exists(keys.projection('hour', hour, MARKER)), 0, 'the hour is no longer whole');
      assert.equal(await redis.exists(keys.projection('day', day, MARKER)), 0, 'nor its day');
      await allExact('after a late row');
      await reader.compactions();
      assert.equal(await redis.get(keys.projection('hour', hour, MARKER)), WHOLE, 'summed again');
      await allExact('after a late row, summed again');
    } finally {
      redis.disconnect();
    }
  });
});
