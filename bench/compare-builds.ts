import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pairedCpuRounds } from './load.js';
import { placement, pinSelf } from './procs.js';
import { median } from './report.js';
import { SCENARIOS, bodyFor, pathFor, type Scenario } from './scenarios.js';
import { rawRequest, singleConnections } from './single-connection.js';
import { startGatewayProcess, startUpstream, type Target } from './targets.js';

/**
 * This checkout's build against another checkout's, on the same fake
 * upstream, for a change to the request path whose effect is smaller than
 * the noise between two bench runs. Two measures:
 *
 * - latency (default): single-connection latency; the two gateways and
 *   direct take turns in ten slices of sequential requests per round, so
 *   whatever else the machine does weighs on each alike. Prints the median
 *   whole-reply time (ms) of each target per round.
 * - cpu: CPU per request under load; both gateways are loaded at the same
 *   time, each by its own connections, on the same core, so a neighbour that
 *   slows the machine slows both alike and their ratio stays. Prints each
 *   round's CPU µs per request of both and the ratio, then the median ratio.
 *   `--rate` holds each gateway to that many requests a second (else each is
 *   loaded as fast as it answers).
 *
 * Both run as shipped, or with `--skills-off` both with an empty skills
 * table, as `npm run bench`'s skills-off and baseline targets are.
 *
 *   node --import tsx bench/compare-builds.ts --baseline ../other-checkout \
 *     [--measure latency|cpu] [--scenarios chat2k,shadow-2k] [--rounds 2]
 *     [--requests 400] [--seconds 5] [--connections 25] [--rate N]
 *     [--starts 4] [--skills-off]
 *
 * Both checkouts must be built (`npm run build`).
 */
const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    measure: { type: 'string', default: 'latency' },
    scenarios: { type: 'string', default: 'chat2k' },
    rounds: { type: 'string', default: '2' },
    requests: { type: 'string', default: '400' },
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '25' },
    rate: { type: 'string' },
    starts: { type: 'string', default: '4' },
    'skills-off': { type: 'boolean', default: false },
  },
});
if (values.baseline === undefined) throw new Error('--baseline <checkout> is required');
if (values.measure !== 'latency' && values.measure !== 'cpu') throw new Error(`--measure is latency or cpu, not ${values.measure}`);
const skillsOff = values['skills-off'];
const place = placement();
pinSelf(place.loadgen);
const upstream = await startUpstream(place.upstream);
const workDirs: string[] = [];
const workDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'compare-builds-'));
  workDirs.push(dir);
  return dir;
};
if (!skillsOff) process.env['BENCH_BASELINE_AS_SHIPPED'] = '1';
type Gateway = { name: string; target: Target & { child: { stop(): Promise<void> } } };

/** both gateways, the baseline started first unless `buildFirst` */
async function startGateways(buildFirst = false): Promise<[baseline: Gateway, build: Gateway]> {
  const startBaseline = async (): Promise<Gateway> => ({ name: 'baseline', target: await startGatewayProcess(place.target, { upstreamPort: upstream.port, workDir: workDir(), baseline: { id: 'baseline1', dir: resolve(values.baseline as string) } }) });
  const startBuild = async (): Promise<Gateway> => ({ name: 'this build', target: await startGatewayProcess(place.target, { upstreamPort: upstream.port, workDir: workDir(), skillsOff }) });
  if (buildFirst) {
    const build = await startBuild();
    return [await startBaseline(), build];
  }
  const baseline = await startBaseline();
  return [baseline, await startBuild()];
}

const stopAll = async (gateways: readonly Gateway[]): Promise<void> => {
  for (const g of gateways) await g.target.child.stop();
};

/** untimed requests per target before the first latency round */
const WARM_START_REQUESTS = 3000;

async function latencyRounds(scenario: Scenario, gateways: readonly Gateway[]): Promise<void> {
  const direct = rawRequest(pathFor('direct', scenario), scenario.headers, bodyFor('direct', scenario));
  const viaGateway = rawRequest(pathFor('gateway', scenario), scenario.headers, bodyFor('gateway', scenario));
  for (let round = 0; round < Number(values.rounds); round++) {
    // fresh processes: a single connection's time kept falling for their first 2,400 requests or so, so the first round warms longer
    const warmup = round === 0 ? WARM_START_REQUESTS : 100;
    const timed = await singleConnections([{ port: upstream.port, request: direct }, ...gateways.map((g) => ({ port: g.target.port, request: viaGateway }))], Number(values.requests), warmup);
    const cells = [['direct', timed[0]!], ...gateways.map((g, i) => [g.name, timed[i + 1]!] as const)] as const;
    process.stdout.write(`${scenario.id} round ${round + 1}: ${cells.map(([name, t]) => `${name} ${t.totalMs.toFixed(3)} ms`).join(', ')}\n`);
  }
}

/**
 * CPU rounds on `--starts` fresh pairs of processes: two processes of one
 * build keep an offset of their own for the life of the process (measured:
 * the same build against itself, −7.6 to +5.6 % per pair over six pairs),
 * so a figure rests on several pairs, started in turns. Each pair gets a
 * 6 s warm-up round not counted (after 2 s, CPU per request was still
 * twice the settled figure).
 */
async function cpuRounds(scenario: Scenario): Promise<void> {
  const opts = { warmupSeconds: 6, rounds: Number(values.rounds), seconds: Number(values.seconds), connections: Number(values.connections), ...(values.rate !== undefined && { rate: Number(values.rate) }) };
  const ratios: number[] = [];
  for (let start = 0; start < Number(values.starts); start++) {
    const [baseline, build] = await startGateways(start % 2 === 1);
    try {
      await pairedCpuRounds(baseline.target, build.target, scenario, opts, (round, base, mine) => {
        ratios.push(mine / base);
        process.stdout.write(`${scenario.id} start ${start + 1} round ${round + 1}: baseline ${base.toFixed(1)} µs CPU/req, this build ${mine.toFixed(1)} (${pct(mine / base)})\n`);
      });
    } finally {
      await stopAll([baseline, build]);
    }
  }
  process.stdout.write(`${scenario.id}: this build against the baseline, median of ${ratios.length} rounds ${pct(median(ratios))} (rounds from ${pct(Math.min(...ratios))} to ${pct(Math.max(...ratios))})\n`);
}

const pct = (ratio: number): string => `${ratio >= 1 ? '+' : ''}${((ratio - 1) * 100).toFixed(1)} %`;

try {
  for (const id of values.scenarios.split(',')) {
    const scenario = SCENARIOS.find((s) => s.id === id);
    if (scenario === undefined) throw new Error(`no scenario ${id} (${SCENARIOS.map((s) => s.id).join(', ')})`);
    if (values.measure === 'cpu') await cpuRounds(scenario);
    else {
      const gateways = await startGateways();
      try {
        await latencyRounds(scenario, gateways);
      } finally {
        await stopAll(gateways);
      }
    }
  }
} finally {
  await upstream.stop();
  for (const dir of workDirs) rmSync(dir, { recursive: true, force: true });
}
