/**
 * Seeds N request rows for one tenant through the gateway's own append code
 * (StreamWriter: stream entries, id index, minute, hour and day rollups),
 * spread over the last 7 days, and times the first usage read and then the
 * reads operators make: usage over each window (7 days grouped by two
 * dimensions is the figure of record) and the durable list's first page.
 * Prints the Redis memory the rows took.
 *
 *   node --import tsx bench/telemetry-seed.ts [rows=1000000] [spread=narrow|wide] [redis=redis://127.0.0.1:6379] [summing=writer|reads]
 *
 * `writer` (as a gateway does): the writer queues each finished hour and day
 * it appended to for summing into projections, after a quiet second here
 * (GW_TELEMETRY_SUM_DELAY_S in a gateway); the bench waits for that to end,
 * then makes the first read. `reads`: the writer sums nothing, so the first
 * read finds no period summed, reads every combination and starts the
 * summing; the bench waits for that to end before the timed reads.
 *
 * `narrow`: 5 keys, 3 teams, 4 use cases, 4 models: a few hundred distinct
 * dimension tuples. `wide`: 300 keys, each with its own team, cost centre and
 * project, calling for 4 use cases on 3 of 8 models with 4 outcomes: about
 * 14,000 tuples. A rollup's read cost grows with its tuples, not its rows.
 *
 * Writes under a fresh namespace and deletes it at the end (also on Ctrl-C).
 */
import type { Redis } from 'ioredis';
import { createLogger } from '../src/telemetry/log.js';
import type { DecisionRecord, RequestRow } from '../src/telemetry/row.js';
import { StreamReader } from '../src/telemetry/stream-reader.js';
import { StreamWriter } from '../src/telemetry/stream-writer.js';
import { inFreshNamespace } from './bench-namespace.js';
import type { Bucket, Dimension } from '../src/telemetry/usage.js';
import type { SumOutcome } from '../src/telemetry/usage-compactor.js';

const rows = Number(process.argv[2] ?? 1_000_000);
const spread = process.argv[3] ?? 'narrow';
const url = process.argv[4] ?? 'redis://127.0.0.1:6379';
const summing = process.argv[5] ?? 'writer';
if (spread !== 'narrow' && spread !== 'wide') throw new Error(`spread must be narrow or wide, not ${spread}`);
if (summing !== 'writer' && summing !== 'reads') throw new Error(`summing must be writer or reads, not ${summing}`);
const tenant = 'bench';
const DAY = 86_400_000;
const pick = <T>(xs: readonly T[], i: number): T => xs[i % xs.length] as T;

const MODELS = ['gpt-4o', 'gpt-4o-mini', 'claude-sonnet-4', 'gemini-2.5-pro', 'o3', 'claude-haiku-4-5', 'gemini-2.5-flash', 'gpt-4.1'];
const PROVIDERS = ['openai', 'openai', 'msgvendor', 'genvendor', 'openai', 'msgvendor', 'genvendor', 'openai'];
const WIDE_KEYS = 300;
/** a reproducible draw in [0, n) for row i, independent per salt (a 32-bit integer hash) */
function draw(i: number, salt: number, n: number): number {
  let h = Math.imul(i ^ Math.imul(salt, 0x9e3779b9), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return ((h ^ (h >>> 16)) >>> 0) % n;
}
/** the varied columns of row i: a few values each (narrow), or keys with their own labels (wide) */
function varied(i: number) {
  if (spread === 'narrow') {
    return {
      key: pick(['a', 'b', 'c', 'd', 'e'], i * 3),
      team: pick(['quant', 'research', 'ops'], i * 5),
      use_case: pick(['summarize', 'chat', 'extract', 'classify'], i * 7),
      cost_centre: pick(['cc-1', 'cc-2'], i * 11),
      project: null,
      m: i % 4,
      status: i % 50 === 0 ? 429 : 200,
    };
  }
  // a key keeps its team, cost centre and project, and calls for 4 use cases on 3 models with 4 outcomes
  const key = draw(i, 1, WIDE_KEYS);
  return {
    key: `k${key}`,
    team: `team-${key % 25}`,
    use_case: `use-${(key * 4 + draw(i, 2, 4)) % 40}`,
    cost_centre: `cc-${key % 12}`,
    project: `p-${key % 30}`,
    m: (key + draw(i, 3, 3)) % MODELS.length,
    status: pick([200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 429, 400, 502], draw(i, 4, 16)),
  };
}

function row(i: number, now: number): { row: RequestRow; decision: DecisionRecord } {
  const v = varied(i);
  const model = MODELS[v.m] as string;
  const provider = PROVIDERS[v.m] as string;
  return {
    row: {
      request_id: `req-${i}`,
      // oldest first, as a live gateway appends them
      ts: new Date(now - 7 * DAY + Math.floor((i / rows) * 7 * DAY)).toISOString(),
      tenant_id: tenant,
      key_id: `key_${v.key}`,
      session_id: `s-${i % 1000}`,
      task_id: null,
      team: v.team,
      use_case: v.use_case,
      desk: null,
      pm: null,
      strategy: null,
      cost_centre: v.cost_centre,
      project: v.project,
      model,
      provider,
      surface: pick(['chat_completions', 'messages', 'generate_content'], i),
      channel: i % 3 === 0 ? 'stream' : 'json',
      tier: 'team',
      relay_reason: null,
      optimization_state: 'off',
      status: v.status,
      cache_tier: null,
      destination_id: null,
      model_serving_route: 'vendor',
      egress_mode: 'pass_through',
      error_detail: null,
      error_type: null,
      tokens_in: 500 + (i % 1000),
      tokens_out: 100 + (i % 300),
      tokens_saved: 0,
      cost_usd: 0.0025 + (i % 100) / 100_000,
      latency_ms: 400 + (i % 800),
      overhead_ms: 0.05,
      retry: false,
      usage_estimated: false,
      tool_fidelity: null,
      skills: {},
    },
    decision: {
      served_by: 'pipeline',
      stages: [{ stage: 'auth', ms: 0.01 }, { stage: `upstream_${provider}`, ms: 400 }],
      route: { provider, model, routed_model: model, reason: null },
      skills: [],
      cache: { result: 'off' },
      budget: null,
      rate_limit: null,
      fail_open: null,
      refusal: null,
      dispatch: null,
    },
  };
}

/** the sum of Redis's own time (µs) in every command so far, from INFO commandstats */
const redisUsec = async (admin: Redis): Promise<number> =>
  [...(await admin.info('commandstats')).matchAll(/,usec=(\d+),/g)].reduce((n, m) => n + Number(m[1]), 0);

/**
 * Five runs of a read: the median wall time, and the median CPU time of this
 * process and of Redis (Redis's is the whole server's, so other clients of a
 * shared Redis add to it). On a busy machine wall time mostly measures the
 * wait for a core; the CPU times hold.
 */
const time = async <T>(admin: Redis, what: string, fn: () => Promise<T>): Promise<T> => {
  const wall: number[] = [];
  const cpu: number[] = [];
  const redis: number[] = [];
  let out: T | undefined;
  for (let i = 0; i < 5; i++) {
    const redisBefore = await redisUsec(admin);
    const t = performance.now();
    const c = process.cpuUsage();
    out = await fn();
    const used = process.cpuUsage(c);
    wall.push(performance.now() - t);
    cpu.push((used.user + used.system) / 1000);
    redis.push(((await redisUsec(admin)) - redisBefore) / 1000);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[2]?.toFixed(1);
  console.log(`${what}: median ${median(wall)} ms (min ${Math.min(...wall).toFixed(1)}, max ${Math.max(...wall).toFixed(1)}); CPU ${median(cpu)} ms here, ${median(redis)} ms in Redis`);
  return out as T;
};

async function seedAndRead(prefix: string, admin: Redis): Promise<void> {
  const memory = async () => Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1]);
  const before = await memory();
  const retentionMs = 168 * 3_600_000;
  // summing left to reads: the writer's delay outlasts the bench
  const sumDelayMs = summing === 'writer' ? 1000 : DAY;
  let periodsSummed = 0;
  const onSumOutcome = (outcome: SumOutcome) => {
    if (outcome === 'summed') periodsSummed++;
  };
  const writer = new StreamWriter({ target: url, prefix, retentionMs, maxBuffered: 20_000, log: createLogger('warn'), onDropped: () => undefined, onAppended: () => undefined, onAppendFailed: () => undefined, sumDelayMs, onSumOutcome });
  await writer.start();
  const now = Date.now();
  const seedStart = performance.now();
  const cpuStart = process.cpuUsage();
  for (let i = 0; i < rows; i++) {
    const r = row(i, now);
    writer.append(r.row, r.decision);
    if (writer.buffered >= 10_000) while (writer.buffered > 0) await writer.flush();
  }
  while (writer.buffered > 0) await writer.flush();
  const seedS = (performance.now() - seedStart) / 1000;
  console.log(`seeded ${rows} rows (${spread}) in ${seedS.toFixed(1)} s (${Math.round(rows / seedS)} rows/s)`);
  const used = (await memory()) - before;
  console.log(`Redis memory: ${(used / 1048576).toFixed(1)} MiB for ${rows} rows (${((used / rows) * 1e6 / 1048576).toFixed(0)} MiB per million rows)`);

  const reader = new StreamReader({ target: url, prefix, retentionMs, boundMs: 30_000, onSumOutcome });
  await reader.start();
  const usage = (groupBy: Dimension[], windowMs: number, bucket?: Bucket) => reader.usage(tenant, { groupBy, bucket, filters: {} }, windowMs, 10_000);
  const cpuMs = (c: NodeJS.CpuUsage) => ((c.user + c.system) / 1000).toFixed(0);
  const first = async (what: string) => {
    const redisBefore = await redisUsec(admin);
    const t = performance.now();
    const c = process.cpuUsage();
    await usage(['model', 'team'], 7 * DAY);
    const wall = performance.now() - t;
    const cpu = cpuMs(process.cpuUsage(c));
    console.log(`first usage read (7d, group_by=model,team, ${what}): ${wall.toFixed(0)} ms; CPU ${cpu} ms here, ${(((await redisUsec(admin)) - redisBefore) / 1000).toFixed(0)} ms in Redis`);
  };
  if (summing === 'writer') {
    // the writer queued each finished hour and day as its rows went in: summing ran beside the seeding and ends a quiet second after it
    await writer.summed();
    console.log(`seeding and the writer's summing: ${((performance.now() - seedStart) / 1000).toFixed(1)} s, ${cpuMs(process.cpuUsage(cpuStart))} ms CPU here; ${periodsSummed} periods summed`);
    await first('the finished periods summed by the writer');
  } else {
    // the first read finds no period summed into projections yet: it reads every combination and starts summing the finished hours and days
    await first('nothing summed yet');
    const t = performance.now();
    const c = process.cpuUsage();
    await reader.compactions();
    console.log(`summing the finished hours and days into projections: ${(performance.now() - t).toFixed(0)} ms, ${cpuMs(process.cpuUsage(c))} ms CPU here; ${periodsSummed} periods summed`);
  }
  console.log(`Redis memory with projections: ${(((await memory()) - before) / 1048576).toFixed(1)} MiB`);
  const found = await time(admin, 'usage, 7d, group_by=model,team', () => usage(['model', 'team'], 7 * DAY));
  console.log(`  ${found.length} groups, ${found.reduce((n, r) => n + Number(r['requests']), 0)} requests`);
  await time(admin, 'usage, 7d, group_by=model,team, bucket=day', () => usage(['model', 'team'], 7 * DAY, 'day'));
  await time(admin, 'usage, 7d, group_by=model,team, bucket=hour', () => usage(['model', 'team'], 7 * DAY, 'hour'));
  await time(admin, 'usage, 30d, group_by=key', () => usage(['key'], 30 * DAY));
  await time(admin, 'usage, 24h, group_by=provider', () => usage(['provider'], DAY));
  await time(admin, 'usage, 1h, group_by=model,team', () => usage(['model', 'team'], DAY / 24));
  await time(admin, 'durable list, first page (100), 1h', () => reader.list(tenant, { startMs: Date.now() - 3_600_000, limit: 100, filters: [], withDecision: false }));
  // seeded rows all carry stream ids of the last minutes: a filter matching few of them would scan them all, as a live one never does
  await time(admin, 'durable list, first page (100), 1h, filter status=200', () => reader.list(tenant, { startMs: Date.now() - 3_600_000, limit: 100, filters: [['status', '200']], withDecision: false }));
  reader.close();
  await writer.close(1000);
}

await inFreshNamespace(url, seedAndRead);
