import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ScorecardRow } from '../../src/lifecycle/rows.js';
import { SkillSamples } from '../../src/lifecycle/samples.js';
import { computeScorecard } from '../../src/lifecycle/scorecard.js';
import { ProcessRowWindow, type SampleSource } from '../../src/lifecycle/sources.js';
import { redisKeys } from '../../src/stores/redis/prefixes.js';
import { hashesOf, RedisSampleReader } from '../../src/stores/redis/sample-reader.js';
import { RedisSampleWriter } from '../../src/stores/redis/sample-writer.js';
import { createLogger } from '../../src/telemetry/log.js';
import type { RedisTarget } from '../../src/stores/redis/client.js';
import { dropRedisPrefix, newRedisPrefix, requireRedis, TEST_REDIS } from '../helpers/gateway.js';
import { startRedisProxy, type RedisProxy } from '../helpers/redis-proxy.js';
import { eventually } from '../helpers/wait.js';

/**
 * The durable samples store (Redis) against the rows it is fed: what a read
 * adds up is what the same rows give in the process window, whichever minute
 * or hour they landed in; a batch sent twice counts once; a key's requests
 * before its latest transition stay out of a read that asks for that.
 */

const SKILL = 'agent_trajectory_compaction';
const MINUTE = 60_000;
const HOUR = 3_600_000;

let seq = 0;
function row(keyId: string, arm: string, at: number, over: Partial<ScorecardRow> = {}, detail?: Record<string, unknown>, outcome = 'applied'): ScorecardRow {
  const n = seq++;
  return {
    request_id: `r${n}`,
    ts: new Date(at).toISOString(),
    tenant_id: 'acme',
    key_id: keyId,
    session_id: null,
    task_id: null,
    status: 200,
    // values far apart, and zeros: sketches widen both ways as they merge
    latency_ms: [3, 40, 500, 7000][n % 4]! + (n % 37) * 13.25,
    overhead_ms: n % 9 === 0 ? 0 : 0.25 + (n % 7) / 4,
    // binary fractions: sums come out the same in whatever order the stores add them
    cost_usd: 0.125 * (1 + (n % 3)),
    tokens_in: 10,
    tokens_out: 5,
    tokens_saved: 0,
    retry: n % 11 === 0,
    relay_reason: null,
    error_detail: null,
    tool_fidelity: n % 4 === 0 ? n % 8 !== 0 : null,
    skills: { [SKILL]: { arm, outcome: arm === 'control' ? 'skipped' : outcome, ...(detail && { detail }) } },
    ...over,
  };
}

/** rows of two keys over the last 55 minutes: single calls, sessions whose turns span minutes, task ids within sessions, shadow, skill reports */
function mixedRows(now: number): ScorecardRow[] {
  const out: ScorecardRow[] = [];
  for (let i = 0; i < 300; i++) {
    const at = now - 55 * MINUTE + i * 11_000;
    const key = i % 2 === 0 ? 'key_a' : 'key_b';
    const arm = ['treatment', 'control', 'shadow'][i % 3] as string;
    const session = i % 5 === 0 ? null : `s${i % 17}`;
    const task = i % 7 === 0 && session !== null ? `t${i % 4}` : null;
    const detail = arm === 'control' ? undefined : { tokens_saved: 64, usd_saved: 0.5, ledger_usd: i % 2 === 0 ? -0.25 : 0.125, kinds: { email: 1 + (i % 2) } };
    out.push(row(key, arm, at, { session_id: session, task_id: task, status: i % 13 === 0 ? 502 : 200 }, detail, i % 29 === 0 ? 'error' : 'applied'));
  }
  return out;
}

describe('durable scorecard samples (Redis)', () => {
  let prefix: string;
  let epoch: string;
  let writer: RedisSampleWriter;
  let reader: RedisSampleReader;
  const started: Array<{ close(): unknown }> = [];

  const newWriter = async (target: RedisTarget) => {
    const w = new RedisSampleWriter({
      target,
      keys: redisKeys(prefix),
      retentionMs: 2 * HOUR,
      maxBuffered: 10_000,
      skills: new Set([SKILL]),
      epochOf: () => epoch,
      log: createLogger('error'),
      onDropped: () => assert.fail('no row may be dropped'),
      onAppendFailed: () => undefined,
    });
    await w.start();
    started.push({ close: () => w.close(1000) });
    return w;
  };
  const settled = async (w: RedisSampleWriter) => {
    while (w.buffered > 0) await w.flush();
  };

  before(async () => {
    await requireRedis();
    prefix = newRedisPrefix();
    epoch = 'tr_first';
    writer = await newWriter(TEST_REDIS);
    reader = new RedisSampleReader({ target: TEST_REDIS, keys: redisKeys(prefix), boundMs: 5000 });
    await reader.start();
  });
  after(async () => {
    for (const s of started) await s.close();
    reader.close();
    await dropRedisPrefix(prefix);
  });

  const cardOf = async (source: SampleSource, tenant: string, now: number, windowMs: number) => {
    const groups = await source.samples(tenant, { skill: SKILL, sinceMs: now - windowMs, nowMs: now, group: () => 'all' });
    const card = computeScorecard({ skill: SKILL, samples: groups.get('all') ?? new SkillSamples(), feedback: new Map(), armed: true, history: [], canaryPercent: 50, source: { store: source.kind } });
    return { ...card, source: undefined };
  };

  it('a read adds up to what the same rows give in the process window, over minutes and hours alike', async () => {
    const now = Date.now();
    const rows = mixedRows(now);
    const window = new ProcessRowWindow(1000, new Set([SKILL]));
    for (const r of rows) {
      window.record(r);
      writer.record(r);
    }
    await settled(writer);
    for (const windowMs of [HOUR, 24 * HOUR]) {
      const durable = await cardOf(reader, 'acme', now, windowMs);
      assert.equal(durable.sample_size.total, 300);
      assert.deepEqual(durable, await cardOf(window, 'acme', now, windowMs), `window ${windowMs / HOUR}h`);
    }
  });

  it('a batch sent again after its reply was lost counts once', async () => {
    const proxy: RedisProxy = await startRedisProxy();
    started.push(proxy);
    const slow = await newWriter(proxy.url);
    const now = Date.now();
    proxy.hangOnCommand('eval', 'evalsha');
    for (let i = 0; i < 30; i++) slow.record(row('key_lost', 'treatment', now - i));
    const first = slow.flush();
    // the batch waits in transit past the writer's timeout: the writer will send it again
    await first;
    proxy.resume();
    await eventually(async () => {
      await slow.flush();
      return slow.buffered === 0;
    }, 'the batch to be taken');
    const groups = await reader.samples('acme', { skill: SKILL, sinceMs: now - HOUR, nowMs: now, group: (k) => (k === 'key_lost' ? k : undefined) });
    assert.equal(groups.get('key_lost')?.arms.treatment.totals.n, 30);
  });

  it('a read since a key\'s transition counts only the requests served after it', async () => {
    const now = Date.now();
    epoch = 'tr_before';
    for (let i = 0; i < 7; i++) writer.record(row('key_moved', 'treatment', now - 1000 + i));
    await settled(writer);
    epoch = 'tr_after';
    for (let i = 0; i < 5; i++) writer.record(row('key_moved', 'treatment', now - 500 + i));
    await settled(writer);
    const read = async (since?: string) =>
      (await reader.samples('acme', { skill: SKILL, sinceMs: now - HOUR, nowMs: now, group: (k) => (k === 'key_moved' ? k : undefined), ...(since && { since: new Map([['key_moved', { id: since, timestamp: '' }]]) }) }))
        .get('key_moved')
        ?.arms.treatment.totals.n;
    assert.deepEqual([await read(), await read('tr_after')], [12, 5]);
  });
});

describe('durable scorecard samples: which skills', () => {
  it('keeps the skills a scorecard can be asked about, not a row\'s others (the guardrails)', async () => {
    await requireRedis();
    const prefix = newRedisPrefix();
    const keys = redisKeys(prefix);
    const writer = new RedisSampleWriter({ target: TEST_REDIS, keys, retentionMs: HOUR, maxBuffered: 100, skills: new Set([SKILL]), epochOf: () => '', log: createLogger('error'), onDropped: () => undefined, onAppendFailed: () => undefined });
    const reader = new RedisSampleReader({ target: TEST_REDIS, keys, boundMs: 5000 });
    await writer.start();
    await reader.start();
    try {
      const now = Date.now();
      const r = row('key_g', 'treatment', now);
      writer.record({ ...r, skills: { ...r.skills, guardrails: { arm: 'treatment', outcome: 'applied' } } });
      while (writer.buffered > 0) await writer.flush();
      const read = async (skill: string) => (await reader.samples('acme', { skill, sinceMs: now - HOUR, nowMs: now, group: () => 'all' })).get('all')?.arms.treatment.totals.n;
      assert.deepEqual([await read(SKILL), await read('guardrails')], [1, undefined]);
    } finally {
      await writer.close(1000);
      reader.close();
      await dropRedisPrefix(prefix);
    }
  });
});

describe('which hashes a window reads', () => {
  const at = (h: number, m: number) => Date.UTC(2030, 0, 1, h, m, 30);

  it('a window of up to an hour: the minutes of its first hour, then the hours after', () => {
    const plan = hashesOf(at(10, 20) - HOUR, at(10, 20));
    assert.deepEqual(plan[0], ['m', Math.floor(at(9, 20) / MINUTE)]);
    assert.equal(plan.filter(([u]) => u === 'm').length, 40);
    assert.deepEqual(plan.at(-1), ['h', Math.floor(at(10, 20) / HOUR)]);
    assert.equal(plan.length, 41);
  });

  it('a window within the current hour: its minutes only', () => {
    const plan = hashesOf(at(10, 40) - 15 * MINUTE, at(10, 40));
    assert.deepEqual(plan.map(([u]) => u), Array<string>(16).fill('m'));
  });

  it('a longer window: whole hours, the first one whole', () => {
    const plan = hashesOf(at(10, 20) - 24 * HOUR, at(10, 20));
    assert.equal(plan.length, 25);
    assert.ok(plan.every(([u]) => u === 'h'));
  });
});
