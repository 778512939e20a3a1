import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { placement, pinSelf } from './procs.js';
import { SCENARIOS, bodyFor, pathFor } from './scenarios.js';
import { rawRequest, singleConnections } from './single-connection.js';
import { startGatewayProcess, startUpstream } from './targets.js';

/**
 * Single-connection latency of this checkout's build against another
 * checkout's, both as shipped, on the same fake upstream: the two gateways
 * and direct take turns in ten slices of sequential requests per round, so
 * whatever else the machine does weighs on each alike. For a change to the
 * request path whose effect is smaller than the noise between two bench runs.
 *
 *   node --import tsx bench/compare-builds.ts --baseline ../other-checkout \
 *     [--scenarios chat2k,shadow-2k] [--rounds 2] [--requests 400]
 *
 * Both checkouts must be built (`npm run build`). Prints the median whole-reply
 * time (ms) of each target per round.
 */
const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    scenarios: { type: 'string', default: 'chat2k' },
    rounds: { type: 'string', default: '2' },
    requests: { type: 'string', default: '400' },
  },
});
if (values.baseline === undefined) throw new Error('--baseline <checkout> is required');
const place = placement();
pinSelf(place.loadgen);
const upstream = await startUpstream(place.upstream);
const workDir = () => mkdtempSync(join(tmpdir(), 'compare-builds-'));
process.env['BENCH_BASELINE_AS_SHIPPED'] = '1';
const gateways = [
  { name: 'baseline', target: await startGatewayProcess(place.target, { upstreamPort: upstream.port, workDir: workDir(), baseline: { id: 'baseline1', dir: resolve(values.baseline) } }) },
  { name: 'this build', target: await startGatewayProcess(place.target, { upstreamPort: upstream.port, workDir: workDir() }) },
];
try {
  for (const id of values.scenarios.split(',')) {
    const scenario = SCENARIOS.find((s) => s.id === id);
    if (scenario === undefined) throw new Error(`no scenario ${id} (${SCENARIOS.map((s) => s.id).join(', ')})`);
    const direct = rawRequest(pathFor('direct', scenario), scenario.headers, bodyFor('direct', scenario));
    const viaGateway = rawRequest(pathFor('gateway', scenario), scenario.headers, bodyFor('gateway', scenario));
    for (let round = 0; round < Number(values.rounds); round++) {
      const timed = await singleConnections([{ port: upstream.port, request: direct }, ...gateways.map((g) => ({ port: g.target.port, request: viaGateway }))], Number(values.requests), 100);
      const cells = [['direct', timed[0]!], ...gateways.map((g, i) => [g.name, timed[i + 1]!] as const)] as const;
      process.stdout.write(`${id} round ${round + 1}: ${cells.map(([name, t]) => `${name} ${t.totalMs.toFixed(3)} ms`).join(', ')}\n`);
    }
  }
} finally {
  for (const g of gateways) await g.target.child.stop();
  await upstream.stop();
}
