import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readFile } from 'node:fs/promises';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai.js';
import { bootstrapFile, oneTenant } from '../helpers/gateway.js';
import { spawnGateway, stopGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { eventually } from '../helpers/wait.js';

/**
 * Soak tier (npm run test:soak, before a release): sequential requests for
 * a baseline, then load held at the replica's capacity and at twice that,
 * with shedding: at dispatch (GW_UPSTREAM_MAX_INFLIGHT) and at the transport
 * (GW_INGRESS_BUDGET). The admitted p99 (against the baseline's) and the shed
 * answers' times are reported as the client saw them and as the gateway's
 * access lines have them (accepted to answered: the client, the fake vendor
 * and the gateway share this process, so the client's figures carry their
 * queueing too); RSS is sampled through the run. Bounded: a fixed number of
 * rounds, loopback only.
 */
const CAPACITY = 32;
const ROUNDS = 40;
const { bootstrap, devKey } = oneTenant('soak');
const body = JSON.stringify({ model: 'slow_50', messages: [{ role: 'user', content: 'hi' }] });

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : (s[Math.min(s.length - 1, Math.floor(s.length * p))] as number);
};
const spread = (xs: number[]) => `p50 ${pct(xs, 0.5).toFixed(2)} ms, p99 ${pct(xs, 0.99).toFixed(2)} ms`;

/**
 * The access lines' times (ms from accepted to answered) of the `answered`
 * requests `gw` answered since its log line `from`, admitted and shed; waits
 * for them, since the gateway writes its lines in batches, at least once a second.
 */
async function atTheGateway(gw: GatewayProcess, from: number, answered: number): Promise<{ admitted: number[]; shed: number[] }> {
  const accessLines = () => gw.lines.slice(from).filter((l) => l.includes('"msg":"request"'));
  await eventually(() => accessLines().length >= answered, `${answered} access lines`);
  const lines = accessLines();
  const out = { admitted: [] as number[], shed: [] as number[] };
  for (const l of lines) {
    const { status, ms } = JSON.parse(l) as { status: number; ms: number };
    (status === 503 ? out.shed : out.admitted).push(ms);
  }
  return out;
}

describe('load at capacity and at twice capacity (soak)', () => {
  let fake: FakeOpenAI;
  /** capacity: GW_UPSTREAM_MAX_INFLIGHT calls to the vendor (a dispatch-side shed past it) */
  let dispatchBound: GatewayProcess;
  /** capacity: GW_INGRESS_BUDGET, the bodies of CAPACITY requests (a transport shed past it) */
  let ingressBound: GatewayProcess;
  /** each gateway's RSS after each of its rounds, in MiB */
  const rss = new Map<GatewayProcess, number[]>();
  before(async () => {
    fake = await startFakeOpenAI();
    const env = { GW_BOOTSTRAP: await bootstrapFile(bootstrap), GW_LOG_LEVEL: 'info', GW_UPSTREAM_OPENAI: fake.origin };
    dispatchBound = await spawnGateway({ ...env, GW_UPSTREAM_MAX_INFLIGHT: String(CAPACITY) });
    ingressBound = await spawnGateway({ ...env, GW_INGRESS_BUDGET: String(CAPACITY * body.length) });
  });
  after(async () => {
    for (const gw of [dispatchBound, ingressBound]) if (gw) await stopGateway(gw);
    await fake?.close();
    for (const [gw, series] of rss) process.stdout.write(`RSS series of the ${gw === dispatchBound ? 'dispatch' : 'ingress'}-bound gateway (MiB): ${series.join(' ')}\n`);
  });

  /** the gateway process's resident set, from /proc (Linux) */
  const rssMiB = async (gw: GatewayProcess) => {
    const kb = /VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${gw.child.pid}/status`, 'utf8'))?.[1];
    return Math.round(Number(kb) / 1024);
  };

  const round = async (gw: GatewayProcess, concurrency: number) => {
    const admitted: number[] = [];
    const shed: number[] = [];
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        const t = performance.now();
        const r = await fetch(`http://127.0.0.1:${gw.port}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-gw-key': devKey, 'x-gw-provider-key': 'sk' }, body });
        await r.arrayBuffer();
        (r.status === 503 ? shed : admitted).push(performance.now() - t);
        assert.ok(r.status === 200 || r.status === 503, `status ${r.status}`);
      }),
    );
    rss.set(gw, [...(rss.get(gw) ?? []), await rssMiB(gw)]);
    return { admitted, shed };
  };

  // the admitted requests' p99 under load is read against this one's (the rule: within 2×), as the client saw it and at the gateway
  let unloadedP99 = 0;
  let unloadedAtGatewayP99 = 0;
  it('unloaded: sequential requests, the baseline', async () => {
    const from = dispatchBound.lines.length;
    const ms: number[] = [];
    for (let i = 0; i < ROUNDS * 4; i++) {
      const r = await round(dispatchBound, 1);
      ms.push(...r.admitted);
    }
    unloadedP99 = pct(ms, 0.99);
    const gateway = (await atTheGateway(dispatchBound, from, ms.length)).admitted;
    unloadedAtGatewayP99 = pct(gateway, 0.99);
    process.stdout.write(`unloaded: ${ms.length} requests, p50 ${pct(ms, 0.5).toFixed(1)} ms, p99 ${unloadedP99.toFixed(1)} ms; at the gateway: ${spread(gateway)}\n`);
    assert.equal(ms.length, ROUNDS * 4);
  });

  const phases = [
    ['at capacity', 1, () => dispatchBound],
    ['at twice the dispatch capacity', 2, () => dispatchBound],
    ['at twice the ingress budget', 2, () => ingressBound],
  ] as const;
  for (const [name, factor, target] of phases) {
    it(`${name}: every request answered 200 or 503 overloaded`, async () => {
      const gw = target();
      const from = gw.lines.length;
      const admitted: number[] = [];
      const shed: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const r = await round(gw, CAPACITY * factor);
        admitted.push(...r.admitted);
        shed.push(...r.shed);
      }
      const p99 = pct(admitted, 0.99);
      const gateway = await atTheGateway(gw, from, admitted.length + shed.length);
      process.stdout.write(
        `${name}: ${admitted.length} admitted, p50 ${pct(admitted, 0.5).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms (${(p99 / unloadedP99).toFixed(2)}× unloaded); ${shed.length} shed, ${spread(shed)}; ` +
          `at the gateway: admitted ${spread(gateway.admitted)} (${(pct(gateway.admitted, 0.99) / unloadedAtGatewayP99).toFixed(2)}× unloaded), shed ${spread(gateway.shed)}\n`,
      );
      assert.ok(admitted.length > 0);
      assert.equal(gateway.shed.length, shed.length, 'every shed answer has its access line');
    });
  }
});
