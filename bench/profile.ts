import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { checkReply, load } from './load.js';
import { summarise, summaryMarkdown } from './profile-summary.js';
import { pinSelf, placement } from './procs.js';
import { writeSection } from './report.js';
import { SCENARIOS } from './scenarios.js';
import { startGatewayProcess, startUpstream } from './targets.js';

/**
 * `npm run bench:profile`: the built gateway under `node --cpu-prof`, loaded
 * with one scenario (BENCH_PROFILE_SCENARIO, default json) by autocannon for
 * BENCH_PROFILE_DURATION seconds (default 10) after a 2 s warm-up; then the
 * profile's hot spots are printed and written to docs/performance.md under
 * "Where the time goes" (BENCH_PROFILE_DOC=0 prints only). The .cpuprofile is
 * kept in a temp directory (path printed) for Chrome DevTools or speedscope.
 * BENCH_PROFILE_INTERVAL_US sets the sampling interval (V8's default is
 * 1000 µs); a short one shows the order of work within one request, at the
 * price of a much slower process.
 */

const ROOT = resolve(import.meta.dirname, '..');
const scenarioId = process.env['BENCH_PROFILE_SCENARIO'] ?? 'json';
const seconds = Number(process.env['BENCH_PROFILE_DURATION'] ?? 10);
const connections = Number(process.env['BENCH_CONNECTIONS'] ?? 50);
const writeDoc = process.env['BENCH_PROFILE_DOC'] !== '0';
const interval = process.env['BENCH_PROFILE_INTERVAL_US'];

async function main(): Promise<void> {
  const scenario = SCENARIOS.find((s) => s.id === scenarioId);
  if (!scenario) throw new Error(`BENCH_PROFILE_SCENARIO: unknown ${scenarioId} (known: ${SCENARIOS.map((s) => s.id).join(', ')})`);
  const place = placement();
  pinSelf(place.loadgen);
  const workDir = mkdtempSync(join(tmpdir(), 'gw-profile-'));
  const profDir = join(workDir, 'prof');
  const upstream = await startUpstream(place.upstream);
  let requests = 0;
  try {
    const gateway = await startGatewayProcess(place.target, {
      skillsOff: process.env['BENCH_PROFILE_SKILLS_OFF'] === '1',
      upstreamPort: upstream.port,
      workDir,
      nodeArgs: ['--cpu-prof', '--cpu-prof-dir', profDir, ...(interval ? ['--cpu-prof-interval', interval] : [])],
    });
    try {
      const problem = await checkReply(gateway, scenario);
      if (problem) throw new Error(`the gateway does not answer the ${scenario.id} scenario right: ${problem}`);
      requests += (await load(gateway, scenario, 2, connections))['2xx'] + 1;
      process.stdout.write(`profiling the gateway on ${scenario.title} for ${seconds} s …\n`);
      requests += (await load(gateway, scenario, seconds, connections))['2xx'];
    } finally {
      // the profile is written when the gateway exits (its SIGTERM handler exits cleanly)
      await gateway.child.stop(30_000);
    }
  } finally {
    await upstream.stop();
  }
  const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no .cpuprofile written in ${profDir}`);
  const path = join(profDir, file);
  const markdown = summaryMarkdown(summarise(path, 15), requests);
  process.stdout.write(`\n${markdown}\n\nprofile: ${path}\n`);
  if (writeDoc) {
    const intro = `Profile of ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC (\`npm run bench:profile\`): the built gateway under \`node --cpu-prof\`, ${connections} connections of the ${scenario.title} scenario for ${seconds} s after a 2 s warm-up. Shares are of the main thread's busy samples (the profiler itself adds some overhead, so read shares, not absolute times; "≈ µs/req" divides each function's sampled time by the requests served while profiling). \`(program)\` is native code outside JavaScript: uWS, libuv, syscalls.`;
    writeSection(join(ROOT, 'docs/performance.md'), 'profile', `${intro}\n\n${markdown}`, '# Performance\n');
  }
}

await main();
