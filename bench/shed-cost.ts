/**
 * The CPU a shed request costs the gateway: a gateway process (from src/,
 * through tsx) with a small GW_INGRESS_BUDGET that one slow call in flight
 * fills, then requests declaring a body past what is left, each on a fresh
 * connection as a client sends them; every one is answered 503 `overloaded`
 * at the transport, before its body is read, and its connection closed.
 * Beside it, as a floor, the same number of `GET /livez` on fresh
 * connections (accepting a connection and answering anything at all). CPU
 * is the gateway process's utime+stime from /proc (Linux only), so the
 * client and the fake vendor are not in it; access lines are written as in
 * production (info).
 *
 *   node --import tsx bench/shed-cost.ts [--requests 20000] [--lanes 8]
 */
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { parseArgs } from 'node:util';
import { startFakeOpenAI } from '../test/fakes/openai.js';
import { bootstrapFile, oneTenant } from '../test/helpers/gateway.js';
import { spawnGateway, stopGateway } from '../test/helpers/gateway-process.js';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '20000' }, lanes: { type: 'string', default: '8' } } });
const REQUESTS = Number(values.requests);
const LANES = Number(values.lanes);
const BUDGET = 4096;
/** clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux) */
const TICKS_PER_S = 100;

const { bootstrap, devKey } = oneTenant('shedcost');
const fake = await startFakeOpenAI();
const gw = await spawnGateway({ GW_BOOTSTRAP: await bootstrapFile(bootstrap), GW_UPSTREAM_OPENAI: fake.origin, GW_INGRESS_BUDGET: String(BUDGET), GW_LOG_LEVEL: 'info' });
const pid = gw.child.pid as number;

function cpuTicks(): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** one request on a fresh connection; resolves with the status line's code once the gateway closed it */
function exchange(head: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect(gw.port, '127.0.0.1');
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)));
    socket.on('error', reject);
    socket.write(head);
  });
}

const SHED = `POST /v1/chat/completions HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\nx-gw-key: ${devKey}\r\ncontent-length: ${BUDGET * 2}\r\n\r\n`;
const LIVEZ = 'GET /livez HTTP/1.1\r\nhost: bench\r\nconnection: close\r\n\r\n';

async function run(head: string, n: number, want: number): Promise<number> {
  let next = 0;
  let unexpected = 0;
  const lane = async () => {
    while (next < n) {
      next++;
      if ((await exchange(head)) !== want) unexpected++;
    }
  };
  const before = cpuTicks();
  await Promise.all(Array.from({ length: LANES }, lane));
  if (unexpected > 0) throw new Error(`${unexpected} of ${n} answers were not ${want}`);
  return (((cpuTicks() - before) / TICKS_PER_S) * 1e6) / n;
}

// the slow call whose body fills most of the budget while the vendor holds it
const held = new AbortController();
const holding = fetch(`http://127.0.0.1:${gw.port}/v1/chat/completions`, {
  method: 'POST',
  signal: held.signal,
  headers: { 'content-type': 'application/json', 'x-gw-key': devKey, 'x-gw-provider-key': 'sk-bench' },
  body: JSON.stringify({ model: 'slow_600000', messages: [{ role: 'user', content: 'x'.repeat(BUDGET - 200) }] }),
}).catch(() => undefined);
while (fake.received.length === 0) await new Promise((r) => setTimeout(r, 20));

await run(SHED, Math.min(2000, REQUESTS), 503);
await run(LIVEZ, Math.min(2000, REQUESTS), 200);
const shedUs = await run(SHED, REQUESTS, 503);
const livezUs = await run(LIVEZ, REQUESTS, 200);
process.stdout.write(`${REQUESTS} requests, ${LANES} lanes, each on a fresh connection: shed at the transport ${shedUs.toFixed(1)} µs CPU each; GET /livez ${livezUs.toFixed(1)} µs CPU each\n`);

held.abort();
await holding;
await stopGateway(gw);
await fake.close();
