/**
 * The CPU a shed request costs the gateway: a gateway process (from src/,
 * through tsx) with a small GW_INGRESS_BUDGET that one slow call in flight
 * fills, then requests declaring a body past what is left; every one is
 * answered 503 `overloaded` at the transport, before its body is read, and
 * its connection closed (its body never comes). Measured two ways, as
 * clients send them:
 * - on a fresh connection each, beside the same number of `GET /livez` on
 *   fresh connections as a floor (accepting a connection, answering anything
 *   at all, closing it);
 * - on a kept-alive connection that was just served a `GET /livez`, less
 *   what a `GET /livez` costs on a connection kept open: the shed and the
 *   close it forces (the accept of the connection it ends included, as the
 *   client's next request pays it again).
 * CPU is the gateway process's utime+stime from /proc (Linux only), so the
 * client and the fake vendor are not in it. The gateway is the built one, as
 * production runs it (`npm run build` first: through tsx, its transform adds
 * work of its own to every request), pinned to a core apart from this client
 * when there are two, its access lines written to a file.
 *
 *   node --import tsx bench/shed-cost.ts [--requests 20000] [--lanes 8]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startFakeOpenAI } from '../test/fakes/openai.js';
import { cpuMicros, pinSelf, placement } from './procs.js';
import { BENCH_DEV_KEY, startGatewayProcess } from './targets.js';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '20000' }, lanes: { type: 'string', default: '8' } } });
const REQUESTS = Number(values.requests);
const LANES = Number(values.lanes);
const BUDGET = 4096;

const cpus = placement();
pinSelf(cpus.loadgen);
const fake = await startFakeOpenAI();
const workDir = mkdtempSync(join(tmpdir(), 'shed-cost-'));
const gw = await startGatewayProcess(cpus.target, {
  upstreamPort: Number(new URL(fake.origin).port),
  workDir,
  env: { GW_INGRESS_BUDGET: String(BUDGET) },
});
const devKey = BENCH_DEV_KEY;

/** the status codes of the answers in `text`, in order */
const statuses = (text: string): number[] => [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));

/**
 * One connection: each head is sent once the answer before it is complete
 * (every answer here has a Content-Length); resolves with the status codes
 * once the gateway closed it.
 */
function exchange(heads: readonly string[]): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(gw.port, '127.0.0.1');
    let text = '';
    let sent = 1;
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (sent < heads.length && complete(text) === sent) socket.write(heads[sent++] as string);
    });
    socket.on('close', () => resolve(statuses(text)));
    socket.on('error', reject);
    socket.write(heads[0] as string);
  });
}

/** how many answers in `text` have all their body */
function complete(text: string): number {
  let n = 0;
  let at = 0;
  for (;;) {
    const end = text.indexOf('\r\n\r\n', at);
    if (end < 0) return n;
    const length = Number(/content-length: (\d+)/i.exec(text.slice(at, end))?.[1] ?? 0);
    if (text.length < end + 4 + length) return n;
    n++;
    at = end + 4 + length;
  }
}

const SHED = `POST /v1/chat/completions HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\nx-gw-key: ${devKey}\r\ncontent-length: ${BUDGET * 2}\r\n\r\n`;
const LIVEZ = 'GET /livez HTTP/1.1\r\nhost: bench\r\n\r\n';
const LIVEZ_CLOSE = 'GET /livez HTTP/1.1\r\nhost: bench\r\nconnection: close\r\n\r\n';
/** requests per connection when measuring a kept-open connection's `GET /livez` */
const KEPT = 100;

/** connections the gateway closed before answering every request on them, over every run (reported apart) */
let unanswered = 0;

/** `n` connections, LANES at a time, each sending `heads`: CPU µs per connection */
async function run(heads: readonly string[], n: number, want: readonly number[]): Promise<number> {
  let next = 0;
  let unexpected = '';
  const lane = async () => {
    while (next < n) {
      next++;
      const got = (await exchange(heads)).join();
      if (got === want.join()) continue;
      // closed before its last answer: counted apart
      if (want.join().startsWith(got)) unanswered++;
      else unexpected = got;
    }
  };
  const before = cpuMicros(gw.pid);
  await Promise.all(Array.from({ length: LANES }, lane));
  if (unexpected !== '') throw new Error(`a connection was answered ${unexpected}, not ${want.join(', ')}`);
  return (cpuMicros(gw.pid) - before) / n;
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

const kept = [...Array<string>(KEPT - 1).fill(LIVEZ), LIVEZ_CLOSE];
const warm = Math.min(2000, REQUESTS);
await run([SHED], warm, [503]);
await run([LIVEZ_CLOSE], warm, [200]);
await run([LIVEZ, SHED], warm, [200, 503]);
const shedUs = await run([SHED], REQUESTS, [503]);
const livezUs = await run([LIVEZ_CLOSE], REQUESTS, [200]);
const afterLivezUs = await run([LIVEZ, SHED], REQUESTS, [200, 503]);
const keptUs = (await run(kept, Math.ceil(REQUESTS / KEPT), Array<number>(KEPT).fill(200))) / KEPT;
process.stdout.write(
  `${REQUESTS} requests, ${LANES} lanes. Fresh connection each: shed at the transport ${shedUs.toFixed(1)} µs CPU, GET /livez ${livezUs.toFixed(1)} µs. ` +
    `Kept-alive connection: shed after a served request ${(afterLivezUs - keptUs).toFixed(1)} µs (its close and the accept it forces included), GET /livez on a connection kept open ${keptUs.toFixed(1)} µs` +
    `${unanswered > 0 ? `; ${unanswered} connections closed before their last answer` : ''}\n`,
);

held.abort();
await holding;
await gw.stop();
await fake.close();
rmSync(workDir, { recursive: true, force: true });
