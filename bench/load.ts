import autocannon from 'autocannon';
import { PATH, type Scenario } from './scenarios.js';
import { OneConnection, rawRequest } from './single-connection.js';
import { REQUEST_HEADERS, type Target } from './targets.js';

/** autocannon at a target for a bounded time */
export const load = (target: Target, scenario: Scenario, seconds: number, connections: number) =>
  autocannon({ url: `http://127.0.0.1:${target.port}${PATH}`, method: 'POST', headers: REQUEST_HEADERS, body: scenario.body, connections, duration: seconds });

/** One request on a fresh connection: undefined when the reply is what the scenario expects, else why not. */
export async function checkReply(target: Target, scenario: Scenario): Promise<string | undefined> {
  const conn = await OneConnection.open(target.port);
  try {
    const reply = await conn.send(rawRequest(PATH, REQUEST_HEADERS, scenario.body));
    if (reply.status !== 200) return `status ${reply.status}: ${reply.body.toString().slice(0, 200)}`;
    return scenario.problem(reply.body.toString());
  } finally {
    conn.close();
  }
}
