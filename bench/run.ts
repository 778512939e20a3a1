import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, release, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { placement, pinSelf, cpuMicros, type Placement } from './procs.js';
import { baselineLines, budgetLines, resultsTable, streamTable, writeSection, type Failure, type Row } from './report.js';
import { SCENARIOS, type Scenario } from './scenarios.js';
import { singleConnections } from './single-connection.js';
import { checkReply, load, pairedCpuRounds, requestBytes } from './load.js';
import { poolLine, poolSnapshot } from './pool-metrics.js';
import { inFreshNamespace, redisAnswers } from './bench-namespace.js';
import { isBaseline, nginxVersion, startGatewayProcess, startNginx, startUpstream, type BaselineId, type Target } from './targets.js';

/**
 * `npm run bench`: the fake upstream direct, through the gateway and through
 * nginx, for each scenario; see docs/performance.md for the method.
 *
 * BENCH_DURATION   measured seconds per cell (default 6)
 * BENCH_WARMUP     discarded warm-up seconds per cell (default 2)
 * BENCH_CONNECTIONS  autocannon connections (default 50)
 * BENCH_LATENCY_REQUESTS  sequential requests for the single-connection median (default 1000)
 * BENCH_ONLY       comma list of scenarios (json, stream, body32k, messages-stream,
 *                  converse-stream, execute) and/or targets
 *                  (direct, gateway, redis, skills-off, baseline1…, nginx) to run; a partial run does not touch the docs
 * GW_TEST_REDIS_URL  the Redis of the `redis` target (default redis://127.0.0.1:6379; none reachable: the target is left out)
 * BENCH_FROM_SOURCE=1  run the gateway from src/ through tsx instead of dist/
 * BENCH_BASELINE   comma list of other checkouts whose builds are measured beside skills-off
 *                  as the targets baseline1, baseline2, …
 * BENCH_BASELINE_AS_SHIPPED=1  run the baselines as shipped (their own skills table) instead of with an empty one,
 *                  to compare them with the gateway target
 * BENCH_PASSES     load cells per scenario and target, the targets' order reversed on every other pass (default 1)
 * BENCH_PAIRED_ROUNDS  rounds of skills-off and each baseline loaded at once, after the cells (default 6; see pairedRounds)
 */

const ROOT = resolve(import.meta.dirname, '..');
const DOC = join(ROOT, 'docs/performance.md');
const BASELINES = (process.env['BENCH_BASELINE'] ?? '').split(',').map((dir) => dir.trim()).filter(Boolean).map((dir) => resolve(dir));
const baselineId = (i: number): BaselineId => `baseline${i + 1}`;
const TARGET_IDS: Target['id'][] = ['direct', 'gateway', 'redis', 'skills-off', ...BASELINES.map((_, i) => baselineId(i)), 'nginx'];
/** the Redis the `redis` target runs on (under a fresh key prefix, removed afterwards) */
const REDIS_URL = process.env['GW_TEST_REDIS_URL'] || 'redis://127.0.0.1:6379';

function numberEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${raw}`);
  return n;
}

const config = {
  duration: numberEnv('BENCH_DURATION', 6),
  warmup: numberEnv('BENCH_WARMUP', 2),
  connections: numberEnv('BENCH_CONNECTIONS', 50),
  latencyRequests: numberEnv('BENCH_LATENCY_REQUESTS', 1000),
  passes: numberEnv('BENCH_PASSES', 1),
  pairedRounds: numberEnv('BENCH_PAIRED_ROUNDS', 6),
  fromSource: process.env['BENCH_FROM_SOURCE'] === '1',
};

function selection(): { scenarios: Scenario[]; targets: Target['id'][]; partial: boolean } {
  const only = (process.env['BENCH_ONLY'] ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const known = [...SCENARIOS.map((s) => s.id as string), ...TARGET_IDS];
  const unknown = only.filter((o) => !known.includes(o));
  if (unknown.length > 0) throw new Error(`BENCH_ONLY: unknown ${unknown.join(', ')} (known: ${known.join(', ')}${BASELINES.length > 0 ? '' : '; baseline targets need BENCH_BASELINE'})`);
  const scenarios = SCENARIOS.filter((s) => !only.some((o) => SCENARIOS.some((x) => x.id === o)) || only.includes(s.id));
  const targets = TARGET_IDS.filter((t) => !only.some((o) => (TARGET_IDS as string[]).includes(o)) || only.includes(t));
  return { scenarios, targets, partial: only.length > 0 };
}

function ensureNginx(): void {
  if (spawnSync('nginx', ['-v']).status === 0) return;
  process.stdout.write('nginx is missing: installing it from apt\n');
  execFileSync('apt-get', ['update'], { stdio: 'inherit' });
  execFileSync('apt-get', ['install', '-y', 'nginx'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
}

type LoadFigures = Omit<Row, 'singleMs' | 'firstByteMs' | 'afterFirstByteMs'>;

/** The reply check, then warm-up and measured load: req/s, percentiles, CPU per request. */
async function underLoad(target: Target, scenario: Scenario): Promise<LoadFigures | string> {
  const problem = await checkReply(target, scenario);
  if (problem) return problem;
  await load(target, scenario, config.warmup, config.connections);
  const poolBefore = target.id === 'gateway' ? await poolSnapshot(target.port) : undefined;
  const cpuBefore = cpuMicros(target.pid);
  const result = await load(target, scenario, config.duration, config.connections);
  const cpu = cpuMicros(target.pid) - cpuBefore;
  const pool = poolBefore && poolLine(poolBefore, await poolSnapshot(target.port));
  if (result.non2xx > 0 || result.errors > 0) return `${result.non2xx} non-2xx replies and ${result.errors} errors under load`;
  const requests = result['2xx'];
  return {
    scenario,
    target: target.id,
    reqPerSec: requests / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    cpuMicrosPerReq: cpu / requests,
    requests,
    ...(pool && { pool }),
  };
}

/** Several passes' load figures as one: CPU and req/s over all their requests, the percentiles' mean; each pass's CPU kept. */
function merged(all: LoadFigures[]): LoadFigures {
  // a pass in which no request completed (the box was busy elsewhere) has no figures of its own
  const passes = all.some((p) => p.requests > 0) ? all.filter((p) => p.requests > 0) : all;
  const requests = passes.reduce((sum, p) => sum + p.requests, 0);
  const mean = (pick: (p: LoadFigures) => number) => passes.reduce((sum, p) => sum + pick(p), 0) / passes.length;
  const pools = passes.flatMap((p) => (p.pool ? [p.pool] : []));
  return {
    ...passes[0]!,
    reqPerSec: requests / passes.reduce((sum, p) => sum + p.requests / p.reqPerSec, 0),
    p50Ms: mean((p) => p.p50Ms),
    p99Ms: mean((p) => p.p99Ms),
    cpuMicrosPerReq: passes.reduce((sum, p) => sum + p.cpuMicrosPerReq * p.requests, 0) / requests,
    requests,
    ...(pools.length > 0 && { pool: pools.join('; next pass: ') }),
    ...(all.length > 1 && { passCpu: all.map((p) => (p.requests > 0 ? p.cpuMicrosPerReq : 0)) }),
  };
}

/** seconds of each paired round; each target's rate in it, as a share of the slower one's own req/s in the cells */
const PAIRED_SECONDS = 3;
const PAIRED_SHARE = 0.35;

/**
 * skills-off and a baseline loaded at the same moment, each at the same
 * fixed rate (both together below what the core serves): the per-round
 * ratios of CPU per request (skills-off ÷ baseline). Cells taken in turns
 * put a neighbour's busy seconds on one build only (+60 % on a pair that
 * reads +2 % this way, docs/performance.md); here they weigh on both alike.
 * One pair of processes still carries each process's own lasting offset (a
 * few percent): compare-builds.ts --measure cpu starts several pairs.
 */
async function pairedRounds(scenario: Scenario, off: LoadedTarget, base: LoadedTarget): Promise<number[]> {
  const rate = Math.max(1, Math.floor(PAIRED_SHARE * Math.min(off.figures.reqPerSec, base.figures.reqPerSec)));
  process.stdout.write(`${scenario.id} / skills-off and ${base.target.id} at once, ${rate} req/s each … `);
  const rounds = await pairedCpuRounds(off.target, base.target, scenario, { warmupSeconds: config.warmup, rounds: config.pairedRounds, seconds: PAIRED_SECONDS, connections: config.connections, rate });
  const ratios = rounds.map(([offCpu, baseCpu]) => offCpu / baseCpu);
  process.stdout.write(`skills-off ÷ ${base.target.id} per round: ${ratios.map((r) => r.toFixed(3)).join(' ')}\n`);
  return ratios;
}

type LoadedTarget = { target: Target; figures: LoadFigures };

/**
 * Every target under load in turn (BENCH_PASSES times, the order reversed on
 * every other pass so drift weighs on each alike), then the single-connection
 * timings of those that passed, interleaved.
 */
async function measure(scenario: Scenario, targets: Target[], failures: Failure[]): Promise<Row[]> {
  const eligible = targets.filter((t) => (t.id === 'skills-off' || isBaseline(t.id) ? scenario.skillsOff : t.id === 'redis' ? scenario.onRedis : true));
  const passes = new Map<Target, LoadFigures[]>();
  const failed = new Set<Target>();
  for (let pass = 0; pass < config.passes; pass++) {
    for (const target of pass % 2 === 0 ? eligible : [...eligible].reverse()) {
      if (failed.has(target)) continue;
      process.stdout.write(`${scenario.id} / ${target.id} … `);
      const outcome = await underLoad(target, scenario);
      if (typeof outcome === 'string') {
        failed.add(target);
        failures.push({ scenario: scenario.id, target: target.id, reason: outcome });
        process.stdout.write(`FAILED: ${outcome}\n`);
        continue;
      }
      passes.set(target, [...(passes.get(target) ?? []), outcome]);
      process.stdout.write(`${outcome.reqPerSec.toFixed(0)} req/s, ${outcome.cpuMicrosPerReq.toFixed(1)} µs CPU/req\n`);
    }
  }
  const measured: LoadedTarget[] = eligible.filter((t) => !failed.has(t)).map((target) => ({ target, figures: merged(passes.get(target)!) }));
  const off = measured.find((m) => m.target.id === 'skills-off');
  if (off) for (const base of measured.filter((m) => isBaseline(m.target.id))) base.figures.pairedRatios = await pairedRounds(scenario, off, base);
  const single = await singleConnections(
    measured.map(({ target }) => ({ port: target.port, request: requestBytes(target, scenario) })),
    config.latencyRequests,
    Math.min(200, config.latencyRequests),
  );
  return measured.map(({ target, figures }, i) => {
    const s = single[i]!;
    process.stdout.write(`${scenario.id} / ${target.id} 1-conn p50 ${s.totalMs.toFixed(3)} ms, TTFB ${s.firstByteMs.toFixed(3)} ms\n`);
    return { ...figures, singleMs: s.totalMs, firstByteMs: s.firstByteMs, afterFirstByteMs: s.afterFirstByteMs };
  });
}

function machine(place: Placement, loadAtStart: number[]): string {
  const cpu = cpus();
  const autocannonVersion = (JSON.parse(readFileSync(join(ROOT, 'node_modules/autocannon/package.json'), 'utf8')) as { version: string }).version;
  return [
    `- CPU: ${cpu[0]?.model ?? 'unknown'}, ${cpu.length} logical cores; memory ${(totalmem() / 2 ** 30).toFixed(1)} GiB; Linux ${release()}`,
    `- Node ${process.version}; ${nginxVersion()}; autocannon ${autocannonVersion}; gateway ${config.fromSource ? 'from src/ through tsx' : 'built, dist/src/main.js'}`,
    `- Pinning (taskset): load generator on CPU ${place.loadgen ?? 'any'}, gateway and nginx on CPU ${place.target ?? 'any'}, fake upstream on CPU ${place.upstream ?? 'any'}`,
    `- Load average when the run started: ${loadAtStart.map((x) => x.toFixed(2)).join(' ')} (other work on the box inflates req/s noise and single-connection times more than CPU per request)`,
    `- ${config.connections} connections, ${config.warmup} s warm-up discarded, ${config.duration} s measured per cell; single-connection medians of ${config.latencyRequests} sequential requests per target`,
  ].join('\n');
}

const METHOD = `Method. One fake upstream (bench/fake-upstream.ts, native uWebSockets.js, prebuilt replies) speaks each vendor's wire format
(OpenAI chat completions, Messages SSE, ConverseStream's AWS event stream with valid CRCs) and serves all three targets:
**direct** (the fake itself, on the vendor's paths), **gateway** (one replica, GW_WORKERS=1, built \`dist/\`, a bootstrapped org and developer key,
a pass-through provider key, GW_UPSTREAM_OPENAI/MSGVENDOR/CLOUDY pointed at the fake, info logs written to a file, metrics and accounting on)
**redis** (the same gateway on the Redis at GW_TEST_REDIS_URL or 127.0.0.1:6379, under a fresh key prefix removed afterwards: every row appended to Redis Streams, configuration and rate-limit leases there too; small JSON only, for what telemetry on Redis adds),
**skills-off** (the same gateway started by bench/gateway-skills-off.mjs with an empty skills table: the request skeleton's own cost, without the guardrail stage every parsing request pays; on small JSON, the 2 KB chat body, the stream and the 32 KB body only) and **nginx** (one worker, an upstream keep-alive pool, \`proxy_buffering off\` as a streaming relay needs, the gateway's \`/msgvendor/\`
and \`/cloudy/\` prefixes stripped as the gateway strips them, access log on with a 64 KB buffer).
Every reply is checked once before a cell is measured (a stream's events in order; every event-stream frame decoded, both CRCs verified).
Load: autocannon (settings above). *CPU µs/req* is the target process's utime+stime from /proc/<pid>/stat over the measured
run divided by the 2xx replies (for nginx, master plus worker; for the gateway, the gateway process only, not the fake);
*p50/p99* are autocannon's, at its 1 ms resolution. The single-connection figures come from a raw-socket client sending sequential
requests on one keep-alive connection per target, timed from the moment a request is handed to the socket: *1-conn p50* to the end
of the reply, *TTFB* to the first byte of the reply (status line included); both are medians, "added" is the target's median minus
direct's. The targets of a scenario take turns in 10 slices of these requests, so background load weighs on each alike.
Each stream writes one event per event-loop turn (the chat stream: 20 chunks, the usage chunk and \`[DONE]\`).
Pinning caveat: on 2 cores the fake upstream shares the servers' core, so proxied req/s includes the fake's work;
CPU per request and single-connection latency, the figures that hold on a noisy box, are unaffected by that.`;

const STREAM_METHOD = `Streams, one per surface family (SSE: chat completions and messages; event-stream: ConverseStream), from the same run.
*added TTFB* and *added 1-conn* are the proxy's single-connection medians (first byte; whole reply) minus direct's; *added µs/event*
divides the added whole-reply time by the events the upstream writes; *added µs/later event* divides the added time from the first
byte to the end by the events after the first, the relay's own per-event latency on top of the upstream's pace (a proxy whose first
byte is late finds later events already waiting, so read it beside added TTFB). *CPU µs/event* is the proxy's CPU per request
divided by the events (so it includes the per-request work spread over the stream).`;

const SKELETON = '# Performance\n';

async function main(): Promise<void> {
  const { scenarios, targets: wanted, partial } = selection();
  if (!wanted.includes('redis') || !scenarios.some((s) => s.onRedis)) return measureAll(scenarios, wanted, partial, undefined);
  if (!(await redisAnswers(REDIS_URL))) {
    process.stdout.write(`no Redis answers at ${REDIS_URL}: the redis target is left out\n`);
    return measureAll(scenarios, wanted.filter((t) => t !== 'redis'), partial, undefined);
  }
  await inFreshNamespace(REDIS_URL, (prefix) => measureAll(scenarios, wanted, partial, prefix));
}

async function measureAll(scenarios: Scenario[], wanted: Target['id'][], partial: boolean, redisPrefix: string | undefined): Promise<void> {
  const loadAtStart = loadavg();
  const place = placement();
  pinSelf(place.loadgen);
  if (wanted.includes('nginx')) ensureNginx();
  const workDir = mkdtempSync(join(tmpdir(), 'gw-bench-'));
  const started: Target[] = [];
  const rows: Row[] = [];
  const failures: Failure[] = [];
  try {
    const upstream = await startUpstream(place.upstream);
    started.push(upstream);
    if (wanted.includes('gateway')) started.push(await startGatewayProcess(place.target, { upstreamPort: upstream.port, workDir, fromSource: config.fromSource }));
    if (redisPrefix !== undefined) started.push(await startGatewayProcess(place.target, { upstreamPort: upstream.port, workDir, fromSource: config.fromSource, redis: { url: REDIS_URL, prefix: redisPrefix } }));
    if (wanted.includes('skills-off')) started.push(await startGatewayProcess(place.target, { upstreamPort: upstream.port, workDir, skillsOff: true }));
    for (const [i, dir] of BASELINES.entries()) {
      const id = baselineId(i);
      if (wanted.includes(id)) started.push(await startGatewayProcess(place.target, { upstreamPort: upstream.port, workDir, baseline: { id, dir } }));
    }
    if (wanted.includes('nginx')) started.push(await startNginx(place.target, upstream.port, workDir));
    const targets = started.filter((t) => wanted.includes(t.id));
    for (const scenario of scenarios) rows.push(...(await measure(scenario, targets, failures)));
  } finally {
    for (const t of started.reverse()) await t.stop();
  }
  rmSync(workDir, { recursive: true, force: true });

  const table = resultsTable(rows);
  const streams = streamTable(rows);
  const budget = [...budgetLines(rows), ...baselineLines(rows, BASELINES)];
  const failed = failures.map((x) => `- ${x.scenario} / ${x.target} FAILED: ${x.reason}`);
  process.stdout.write(`\n${table}\n\n${streams}\n\n${[...budget, ...failed].join('\n')}\n`);
  if (partial) {
    process.stdout.write('\n(partial run: docs/performance.md left as it is)\n');
  } else {
    const section = [`Run of ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC (\`npm run bench\`).`, '', machine(place, loadAtStart), '', METHOD, '', table, '', STREAM_METHOD, '', streams, '', ...budget, ...failed].join('\n');
    writeSection(DOC, 'bench', section, SKELETON);
    process.stdout.write(`\nwritten to ${DOC}\n`);
  }
  if (failures.length > 0) process.exitCode = 1;
}

await main();
