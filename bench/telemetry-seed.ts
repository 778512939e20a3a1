/**
 * Seeds N request rows for one tenant through the gateway's own append code
 * (StreamWriter: stream entries, id index, hourly rollups), spread over the
 * last 7 days, then times the reads operators make: a 7-day usage query
 * grouped by two dimensions and the durable list's first page. Prints the
 * Redis memory the rows took.
 *
 *   node --import tsx bench/telemetry-seed.ts [rows=1000000] [redis=redis://127.0.0.1:6379]
 *
 * Writes under a fresh namespace and deletes it at the end.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createLogger } from '../src/telemetry/log.js';
import type { DecisionRecord, RequestRow } from '../src/telemetry/row.js';
import { StreamReader } from '../src/telemetry/stream-reader.js';
import { StreamWriter } from '../src/telemetry/stream-writer.js';

const rows = Number(process.argv[2] ?? 1_000_000);
const url = process.argv[3] ?? 'redis://127.0.0.1:6379';
const prefix = `gwbench:${randomBytes(4).toString('hex')}:`;
const tenant = 'bench';
const DAY = 86_400_000;
const pick = <T>(xs: readonly T[], i: number): T => xs[i % xs.length] as T;

function row(i: number, now: number): { row: RequestRow; decision: DecisionRecord } {
  const model = pick(['gpt-4o', 'gpt-4o-mini', 'claude-sonnet-4', 'gemini-2.5-pro'], i);
  const provider = pick(['openai', 'openai', 'msgvendor', 'genvendor'], i);
  return {
    row: {
      request_id: `req-${i}`,
      // oldest first, as a live gateway appends them
      ts: new Date(now - 7 * DAY + Math.floor((i / rows) * 7 * DAY)).toISOString(),
      tenant_id: tenant,
      key_id: `key_${pick(['a', 'b', 'c', 'd', 'e'], i * 3)}`,
      session_id: `s-${i % 1000}`,
      task_id: null,
      team: pick(['quant', 'research', 'ops'], i * 5),
      use_case: pick(['summarize', 'chat', 'extract', 'classify'], i * 7),
      desk: null,
      pm: null,
      strategy: null,
      cost_centre: pick(['cc-1', 'cc-2'], i * 11),
      project: null,
      model,
      provider,
      surface: pick(['chat_completions', 'messages', 'generate_content'], i),
      channel: i % 3 === 0 ? 'stream' : 'json',
      tier: 'team',
      relay_reason: null,
      optimization_state: 'off',
      status: i % 50 === 0 ? 429 : 200,
      cache_tier: null,
      destination_id: null,
      model_serving_route: 'vendor',
      egress_mode: 'pass_through',
      error_detail: null,
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
    },
  };
}

const time = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
  const runs: number[] = [];
  let out: T | undefined;
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    out = await fn();
    runs.push(performance.now() - t);
  }
  runs.sort((a, b) => a - b);
  console.log(`${what}: median ${runs[2]?.toFixed(1)} ms (min ${runs[0]?.toFixed(1)}, max ${runs[4]?.toFixed(1)})`);
  return out as T;
};

async function main(): Promise<void> {
  const admin = new Redis(url);
  const memory = async () => Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1]);
  const before = await memory();
  const retentionMs = 168 * 3_600_000;
  const writer = new StreamWriter({ url, prefix, retentionMs, maxBuffered: 20_000, log: createLogger('warn'), onDropped: () => undefined, onAppended: () => undefined, onAppendFailed: () => undefined });
  await writer.start();
  const now = Date.now();
  const seedStart = performance.now();
  for (let i = 0; i < rows; i++) {
    const r = row(i, now);
    writer.append(r.row, r.decision);
    if (writer.buffered >= 10_000) while (writer.buffered > 0) await writer.flush();
  }
  while (writer.buffered > 0) await writer.flush();
  const seedS = (performance.now() - seedStart) / 1000;
  console.log(`seeded ${rows} rows in ${seedS.toFixed(1)} s (${Math.round(rows / seedS)} rows/s)`);
  const used = (await memory()) - before;
  console.log(`Redis memory: ${(used / 1048576).toFixed(1)} MiB for ${rows} rows (${((used / rows) * 1e6 / 1048576).toFixed(0)} MiB per million rows)`);

  const reader = new StreamReader({ url, prefix, retentionMs, boundMs: 30_000 });
  await reader.start();
  const usage = await time('usage, 7d, group_by=model,team', () => reader.usage(tenant, { groupBy: ['model', 'team'], bucket: undefined, filters: {} }, 7 * DAY, 1000));
  console.log(`  ${usage.length} groups, ${usage.reduce((n, r) => n + Number(r['requests']), 0)} requests`);
  await time('usage, 7d, group_by=model,team, bucket=day', () => reader.usage(tenant, { groupBy: ['model', 'team'], bucket: 'day', filters: {} }, 7 * DAY, 1000));
  await time('durable list, first page (100), 1h', () => reader.list(tenant, { startMs: Date.now() - 3_600_000, limit: 100, filters: [], withDecision: false }));
  await time('durable list, first page (100), 1h, filter team=ops', () => reader.list(tenant, { startMs: Date.now() - 3_600_000, limit: 100, filters: [['team', 'ops']], withDecision: false }));

  reader.close();
  await writer.close(1000);
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await admin.unlink(...keys);
  } while (cursor !== '0');
  admin.disconnect();
}

await main();
