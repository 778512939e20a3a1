/**
 * The scorecard over Redis, as a deployment runs it: a real gateway (Redis
 * under a fresh namespace), requests' rows handed to its row sink as accounting
 * hands them (the replica's sample writer), and the scorecard read through its
 * HTTP route.
 *
 * 1. 100,000 rows of one tenant in the last hour (20 keys on a 50% canary of
 *    agent_trajectory_compaction, two thirds in agent sessions of 6 turns,
 *    success filed for half the sessions), read as the tenant's 1h scorecard,
 *    one key's, and the tenant's 7d. Twice: sessions whose turns come within a
 *    minute or two (agents at work), and sessions whose turns are spread over
 *    the whole hour (every task then sits in many minutes).
 * 2. One breaker sweep period over 1,000 keys of a tenant on the canary (20
 *    requests each; one key in ten failing open, so it is rolled back), then
 *    the next period.
 * 3. What adding samples costs Redis at a steady pace (rows spread over 5 s),
 *    beside the burst of part 1.
 *
 *   node --import tsx bench/scorecard.ts [redis=redis://127.0.0.1:6379]
 *
 * Writes under a fresh namespace and deletes it at the end (or on Ctrl-C).
 */
import { createHash } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { ScorecardRow } from '../src/lifecycle/rows.js';
import { startGateway, type RunningGateway } from '../src/main.js';
import { loadSettings } from '../src/settings.js';
import { armFor } from '../src/skills/arms.js';
import { hashesOf } from '../src/stores/redis/sample-reader.js';
import { redisKeys } from '../src/stores/redis/prefixes.js';
import { inFreshNamespace } from './bench-namespace.js';

const url = process.argv[2] ?? 'redis://127.0.0.1:6379';
const SKILL = 'agent_trajectory_compaction';
const CANARY = 'canary:50';
const HOUR = 3_600_000;
const ROWS = 100_000;
const SESSION_TURNS = 6;
const SECRET = 'config-secret-for-the-scorecard-bench';

interface Key {
  org: string;
  keyId: string;
  secret: string;
}

/** distinct ids in the shapes the gateway accepts */
const keyOf = (org: string, i: number): Key => {
  const digest = (salt: string) => [...createHash('sha256').update(`${salt}:${org}:${i}`).digest()];
  const base32 = 'abcdefghijklmnopqrstuvwxyz234567';
  const base62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  return {
    org,
    keyId: `key_${digest('id').slice(0, 20).map((b) => base32[b % 32]).join('')}`,
    secret: `gw_${digest('secret').concat(digest('more')).slice(0, 40).map((b) => base62[b % 62]).join('')}`,
  };
};

const tenants = { clustered: 20, spread: 20, sweep: 1000 } as const;
const keys = Object.fromEntries(Object.entries(tenants).map(([org, n]) => [org, Array.from({ length: n }, (_, i) => keyOf(org, i))])) as Record<keyof typeof tenants, Key[]>;

// set once the namespace is made (see the end)
let prefix: string;
let redis: Redis;
let gateway: RunningGateway;
let base: string;

async function api(path: string, key: Key, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${base}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

async function onCanary(list: readonly Key[]): Promise<void> {
  for (const k of list) await api(`/api/v1/tenant/${k.org}/skills/${SKILL}/lifecycle`, k, { key_id: k.keyId, mode: CANARY });
}

function row(key: Key, i: number, ts: number, session: string | null, failing = false): ScorecardRow {
  const arm = armFor(SKILL, CANARY, session ?? undefined, `r${i}`) as string;
  return {
    request_id: `r${i}`,
    ts: new Date(ts).toISOString(),
    tenant_id: key.org,
    key_id: key.keyId,
    session_id: session,
    task_id: null,
    status: i % 97 === 0 ? 502 : 200,
    latency_ms: 300 + (i % 900),
    overhead_ms: 0.2 + (i % 30) / 20,
    cost_usd: 0.002 + (i % 10) / 10_000,
    tokens_in: 800,
    tokens_out: 120,
    tokens_saved: 0,
    retry: i % 50 === 0,
    relay_reason: failing ? 'fail_open' : null,
    error_detail: null,
    tool_fidelity: i % 4 === 0 ? i % 400 !== 0 : null,
    skills: {
      [SKILL]: {
        arm,
        outcome: arm === 'control' ? 'skipped' : failing ? 'ceiling_exceeded' : 'applied',
        ...(arm === 'treatment' && !failing && i % 5 === 0 && { detail: { tokens_saved: 900, usd_saved: 0.002, ledger_usd: 0.001 } }),
      },
    },
  };
}

/** hands rows to the gateway's row sink as finished requests would reach it, a batch's worth at a time */
async function record(rows: Iterable<ScorecardRow>): Promise<number> {
  const t0 = performance.now();
  let n = 0;
  for (const r of rows) {
    gateway.scorecardRows.record(r);
    if (++n % 2000 === 0) await yieldToLoop();
  }
  return performance.now() - t0;
}

const sizes = (card: Record<string, unknown>) => card['sample_size'] as Record<string, number>;

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`waited 2 minutes for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Redis's main-thread CPU time so far (ms): with the gateway's own, what a read costs on a machine with nothing else to do */
async function redisCpuMs(): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return (field('used_cpu_user_main_thread') + field('used_cpu_sys_main_thread')) * 1000;
}

/** per run: wall time, this process's CPU time (the gateway runs in it) and Redis's; medians */
async function timed(what: string, runs: number, fn: () => Promise<unknown>): Promise<void> {
  const wall: number[] = [];
  const cpu: number[] = [];
  const redisCpu: number[] = [];
  for (let i = 0; i < runs; i++) {
    const r0 = await redisCpuMs();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await fn();
    wall.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
    redisCpu.push((await redisCpuMs()) - r0);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  console.log(`${what}: wall ${median(wall).toFixed(1)} ms (gateway CPU ${median(cpu).toFixed(1)} ms, Redis CPU ${median(redisCpu).toFixed(1)} ms), ${runs} runs`);
}

/** the Redis memory and hash fields of a tenant's samples of the skill, and the fields a 1h read fetches */
async function footprint(tenant: string): Promise<string> {
  const k = redisKeys(prefix);
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', k.samples(tenant, SKILL, 'm', 0).replace(/m0$/, '*'), 'COUNT', 1000);
    cursor = next;
    found.push(...batch);
  } while (cursor !== '0');
  let bytes = 0;
  let fields = 0;
  for (const key of found) {
    bytes += (await redis.memory('USAGE', key)) ?? 0;
    fields += await redis.hlen(key);
  }
  const now = Date.now();
  let read = 0;
  for (const [unit, n] of hashesOf(now - HOUR, now)) read += await redis.hlen(k.samples(tenant, SKILL, unit, n));
  return `${found.length} hashes, ${fields} fields, ${(bytes / 1048576).toFixed(1)} MiB; a 1h read fetches ${read} fields`;
}

async function readBench(tenant: 'clustered' | 'spread'): Promise<void> {
  const list = keys[tenant];
  await onCanary(list);
  const now = Date.now();
  const start = now - HOUR + 60_000;
  const sessions = Math.ceil((ROWS * 2) / 3 / SESSION_TURNS);
  const spread = tenant === 'spread';
  function* rows(): Generator<ScorecardRow> {
    for (let i = 0; i < ROWS; i++) {
      const ts = start + Math.floor((i / ROWS) * (HOUR - 120_000));
      if (i % 3 === 0) {
        yield row(list[i % list.length]!, i, ts, null);
        continue;
      }
      const s = Math.floor((i * 2) / 3);
      // clustered: a session's turns are consecutive among 40 agents at work; spread: every session is at work all hour
      const session = spread ? s % sessions : Math.floor(s / (SESSION_TURNS * 40)) * 40 + (s % 40);
      yield row(list[session % list.length]!, i, ts, `${tenant}-s${session}`);
    }
  }
  const r0 = await redisCpuMs();
  const ms = await record(rows());
  const owner = list[0]!;
  const card = (query = '') => api(`/api/v1/tenant/${tenant}/skills/${SKILL}/scorecard${query}`, owner);
  await until('the samples in Redis', async () => sizes(await card())['total'] === ROWS);
  const writeCpu = (await redisCpuMs()) - r0;
  for (let s = 0; s < sessions; s += 2) await api('/v1/feedback', list[s % list.length]!, { session_id: `${tenant}-s${s}`, outcome: 'success' });
  console.log(`\n${tenant}: ${ROWS} rows recorded in ${(ms / 1000).toFixed(1)} s, adding them took Redis ${writeCpu.toFixed(0)} ms of CPU; samples: ${await footprint(tenant)}`);
  await timed('  GET scorecard, tenant, window=1h', 9, () => card());
  const c = await card();
  const d = c['downstream_ai_metrics'] as Record<string, unknown>;
  console.log(`    ${c['status']}, samples ${JSON.stringify(sizes(c))}, tasks ${JSON.stringify(d['task_sample_size'])}, with feedback ${JSON.stringify(d['tasks_with_feedback'])}`);
  await timed('  GET scorecard, one key of 20, window=1h', 9, () => card(`?key_id=${owner.keyId}`));
  await timed('  GET scorecard, tenant, window=7d', 5, () => card('?window=7d'));
  // off the canary: the sweep bench watches its own keys only
  for (const k of list) await api(`/api/v1/tenant/${k.org}/skills/${SKILL}/lifecycle`, k, { key_id: k.keyId, mode: 'off' });
}

async function sweepBench(): Promise<void> {
  const list = keys.sweep;
  await onCanary(list);
  const now = Date.now();
  function* rows(): Generator<ScorecardRow> {
    let i = 0;
    for (const [k, key] of list.entries()) {
      for (let j = 0; j < 20; j++, i++) yield row(key, i, now - 30 * 60_000 + i, `${key.keyId}-${j}`, k % 10 === 0 && j % 2 === 0);
    }
  }
  await record(rows());
  const owner = list[0]!;
  await until('the samples in Redis', async () => sizes(await api(`/api/v1/tenant/sweep/skills/${SKILL}/scorecard`, owner))['total'] === 20_000);
  console.log('\nsweep: 1,000 keys on the canary, 20 requests each (100 of them failing open)');
  await timed('  one period, rolling back the 100 tripped keys', 1, async () => console.log(`    ${JSON.stringify(await gateway.sweep.runOnce())}`));
  await timed('  the next periods (nothing left to roll back)', 5, () => gateway.sweep.runOnce());
}

/** rows at `perSecond` for 5 s over `keyCount` keys of the sweep tenant, and the Redis CPU they took */
async function writeCost(perSecond: number, keyCount: number): Promise<void> {
  const list = keys.sweep.slice(0, keyCount);
  // Redis's own background work (and other clients'), measured for a second and taken off
  const idle = await redisCpuMs();
  await new Promise((r) => setTimeout(r, 1000));
  const background = (await redisCpuMs()) - idle;
  const r0 = await redisCpuMs();
  const t0 = Date.now();
  let n = 0;
  for (let tick = 0; tick < 25; tick++) {
    for (let j = 0; j < perSecond / 5; j++, n++) gateway.scorecardRows.record(row(list[n % list.length]!, 1_000_000 + n, Date.now(), `pace-${Math.floor(n / 6)}`));
    await new Promise((r) => setTimeout(r, 200));
  }
  // the last batch goes out within a second
  await new Promise((r) => setTimeout(r, 1500));
  const used = Math.max(0, (await redisCpuMs()) - r0 - (background * (Date.now() - t0)) / 1000);
  console.log(`  ${perSecond} rows/s over ${keyCount} keys: ${n} rows, Redis CPU ${used.toFixed(0)} ms: ${((used * 1000) / n).toFixed(1)} µs per row`);
}

await inFreshNamespace(url, async (namespace, admin) => {
  prefix = namespace;
  redis = admin;
  const dir = await mkdtemp(join(tmpdir(), 'gw-scorecard-bench-'));
  const bootstrap = join(dir, 'bootstrap.json');
  await writeFile(
    bootstrap,
    JSON.stringify({
      orgs: Object.keys(tenants).map((org_id) => ({ org_id, rps_cap: 1_000_000 })),
      dev_keys: Object.values(keys).flat().map((k) => ({ org_id: k.org, key_id: k.keyId, api_key: k.secret })),
    }),
  );
  gateway = await startGateway(
    loadSettings({
      GW_HOST: '127.0.0.1',
      GW_PORT: '0',
      GW_LOG_LEVEL: 'error',
      GW_REDIS_URL: url,
      GW_REDIS_PREFIX: prefix,
      GW_SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
      GW_CONFIG_SECRET: SECRET,
      GW_BOOTSTRAP: bootstrap,
      // the bench runs its sweep periods itself
      GW_BREAKER_SWEEP_S: '3600',
      GW_TELEMETRY_BUFFER_ROWS: String(ROWS * 2),
    }),
  );
  base = `http://127.0.0.1:${gateway.port}`;
  try {
    await readBench('clustered');
    await readBench('spread');
    await sweepBench();
    console.log('\nadding samples at a steady pace (batches go out every second)');
    await writeCost(25, 20);
    await writeCost(250, 20);
    await writeCost(250, 1000);
  } finally {
    await gateway.close();
  }
});
