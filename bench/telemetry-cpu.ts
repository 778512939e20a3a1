/**
 * CPU a finished request's telemetry costs the gateway process, per row:
 * the row and decision record built, kept in the ring and counted in the
 * metrics (what every replica does, with or without Redis), and on top of
 * that, with Redis, the row queued, encoded and appended in batches (the
 * writer's share, measured until Redis has taken every row). Redis's own CPU
 * is not the gateway's and is not counted. Compare the figures with the
 * gateway's CPU per relayed request in docs/performance.md.
 *
 *   node --import tsx bench/telemetry-cpu.ts [rows=50000] [redis=redis://127.0.0.1:6379]
 *
 * Writes under a fresh namespace and deletes it at the end.
 */
import { StageClock } from '../src/http/stages.js';
import { createLogger } from '../src/telemetry/log.js';
import { createMetrics } from '../src/telemetry/metrics.js';
import { InspectorRing } from '../src/telemetry/ring.js';
import type { FinishedRequest } from '../src/telemetry/row.js';
import { TelemetryRows } from '../src/telemetry/row-sink.js';
import { StreamWriter } from '../src/telemetry/stream-writer.js';
import { inFreshNamespace } from './bench-namespace.js';

const rows = Number(process.argv[2] ?? 50_000);
const url = process.argv[3] ?? 'redis://127.0.0.1:6379';

const stages = new StageClock();
for (const name of ['auth', 'policy_rate_limit', 'skills', 'metering_spend_cap', 'upstream_openai']) {
  stages.begin(name);
  stages.end();
}

/** a relayed small-JSON chat call as accounting hands it over (a guardrail ran; the org has a cap) */
function finished(i: number): FinishedRequest {
  return {
    requestId: `req-${i}`,
    headers: { 'content-type': 'application/json', authorization: 'Bearer gw_x', 'x-gw-team': 'quant', 'x-gw-use-case': 'summarize', 'user-agent': 'OpenAI/Python 1.0' },
    dimensions: undefined,
    bodyHash: `digest${i}`,
    tenantId: 'acme',
    keyId: 'key_acmeacmeacmeacmeacme',
    tier: 'team',
    surface: 'chat_completions',
    provider: 'openai',
    model: 'gpt-4o',
    status: 200,
    usage: { input_tokens: 12, output_tokens: 9, cached_tokens: 0 },
    usageEstimated: false,
    costUsd: 0.00012,
    latencyMs: 1.23,
    overheadMs: 0.41,
    ttfbMs: undefined,
    streamed: false,
    servedBy: 'pipeline',
    failOpenReason: undefined,
    errorDetail: undefined,
    errorType: undefined,
    refusal: undefined,
    stages: stages.timings(),
    credentialSource: 'pass_through',
    skills: [{ skill: 'guardrails', mode: 'prod', arm: 'prod', outcome: 'miss', ms: 0.2, detail: { detected: [] } }],
    budget: { reserved_usd: 0.05, settled_usd: 0.00012 },
    rateLimit: { remaining: 7 },
    lines: undefined,
  };
}

/** process CPU µs (user + system) spent by `fn`, per row */
async function cpuPerRow(fn: () => Promise<void>): Promise<number> {
  const before = process.cpuUsage();
  await fn();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / rows;
}

async function measure(prefix: string): Promise<void> {
  const log = createLogger('warn');
  const requests = Array.from({ length: rows }, (_, i) => finished(i));
  // warm both paths up first, so neither pays the compiler's first passes
  const warm = new TelemetryRows(new InspectorRing(), undefined, createMetrics(), log);
  for (let i = 0; i < 5000; i++) warm.finished(finished(i));

  const off = new TelemetryRows(new InspectorRing(), undefined, createMetrics(), log);
  const withoutRedis = await cpuPerRow(async () => {
    for (const r of requests) off.finished(r);
  });

  const writer = new StreamWriter({ target: url, prefix, retentionMs: 3_600_000, maxBuffered: rows, log, onDropped: () => undefined, onAppended: () => undefined, onAppendFailed: () => undefined, sumDelayMs: 60_000 });
  await writer.start();
  const on = new TelemetryRows(new InspectorRing(), writer, createMetrics(), log);
  let queued = 0;
  const queueing = await cpuPerRow(async () => {
    for (const r of requests) on.finished(r);
    queued = writer.buffered;
  });
  const appending = await cpuPerRow(async () => {
    while (writer.buffered > 0) await writer.flush();
  });
  await writer.close(1000);

  console.log(`${rows} rows (${queued} queued for Redis)`);
  console.log(`row, ring and metrics (telemetry without Redis): ${withoutRedis.toFixed(1)} µs CPU per row`);
  console.log(`with Redis, on the request path (row + queued): ${queueing.toFixed(1)} µs CPU per row`);
  console.log(`with Redis, batched appends (off the request path): ${appending.toFixed(1)} µs CPU per row`);
  console.log(`telemetry on over off: ${(queueing + appending - withoutRedis).toFixed(1)} µs CPU per row`);
}

await inFreshNamespace(url, measure);
