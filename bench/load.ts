import autocannon from 'autocannon';
import { bodyFor, pathFor, type Scenario } from './scenarios.js';
import { OneConnection, rawRequest } from './single-connection.js';
import type { Target } from './targets.js';
import { cpuMicros } from './procs.js';

/** The scenario's request as raw bytes, on the path this target serves it at. */
export const requestBytes = (target: Target, scenario: Scenario): Buffer => rawRequest(pathFor(target.id, scenario), scenario.headers, bodyFor(target.id, scenario));

/** autocannon at a target for a bounded time, as fast as it answers or at `overallRate` requests a second */
export const load = (target: Target, scenario: Scenario, seconds: number, connections: number, overallRate?: number) =>
  autocannon({
    url: `http://127.0.0.1:${target.port}${pathFor(target.id, scenario)}`,
    method: 'POST',
    headers: scenario.headers,
    body: bodyFor(target.id, scenario),
    connections,
    duration: seconds,
    ...(overallRate !== undefined && { overallRate }),
  });

/**
 * CPU µs per 2xx reply of each target, all loaded at the same moment (each
 * by its own connections, at `rate` requests a second when given): whatever
 * else the machine does meanwhile weighs on each alike, so their ratio holds
 * where figures taken in turns do not. Throws on any non-2xx reply or error.
 */
export async function cpuAtOnce(targets: Target[], scenario: Scenario, seconds: number, connections: number, rate?: number): Promise<number[]> {
  const before = targets.map((t) => cpuMicros(t.pid));
  const results = await Promise.all(targets.map((t) => load(t, scenario, seconds, connections, rate)));
  return targets.map((t, i) => {
    const r = results[i]!;
    if (r.non2xx > 0 || r.errors > 0 || r['2xx'] === 0) throw new Error(`${scenario.id}: ${r.non2xx} non-2xx replies, ${r.errors} errors and ${r['2xx']} 2xx from ${t.id}`);
    return (cpuMicros(t.pid) - before[i]!) / r['2xx'];
  });
}

/**
 * Two targets loaded at once: a warm-up round not counted, then `rounds`
 * rounds, the order the two loads start in swapped each round so neither
 * is always first. Each round's CPU µs per request of both, `a`'s first.
 */
export async function pairedCpuRounds(
  a: Target,
  b: Target,
  scenario: Scenario,
  opts: { warmupSeconds: number; rounds: number; seconds: number; connections: number; rate?: number },
  onRound?: (round: number, aCpu: number, bCpu: number) => void,
): Promise<Array<[number, number]>> {
  await cpuAtOnce([a, b], scenario, opts.warmupSeconds, opts.connections, opts.rate);
  const out: Array<[number, number]> = [];
  for (let round = 0; round < opts.rounds; round++) {
    const swap = round % 2 === 1;
    const [first, second] = (await cpuAtOnce(swap ? [b, a] : [a, b], scenario, opts.seconds, opts.connections, opts.rate)) as [number, number];
    const pair: [number, number] = swap ? [second, first] : [first, second];
    out.push(pair);
    onRound?.(round, ...pair);
  }
  return out;
}

/** One request on a fresh connection: undefined when the reply is what the scenario expects, else why not. */
export async function checkReply(target: Target, scenario: Scenario): Promise<string | undefined> {
  const conn = await OneConnection.open(target.port);
  try {
    const reply = await conn.send(requestBytes(target, scenario));
    if (reply.status !== 200) return `status ${reply.status}: ${reply.body.toString().slice(0, 200)}`;
    return scenario.problem(reply.body, target.id);
  } finally {
    conn.close();
  }
}
