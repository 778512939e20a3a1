import autocannon from 'autocannon';
import { bodyFor, pathFor, type Scenario } from './scenarios.js';
import { OneConnection, rawRequest } from './single-connection.js';
import type { Target } from './targets.js';

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
