import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai.js';
import { oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Soak tier (npm run test:soak, before a release): sequential requests for
 * a baseline, then load held at the replica's dispatch capacity and at twice
 * that, with shedding; the admitted p99 (against the baseline's) and the shed
 * answers' times are reported, and RSS is sampled through the run. Bounded:
 * a fixed number of rounds, loopback only.
 */
const CAPACITY = 32;
const ROUNDS = 40;
const { bootstrap, devKey } = oneTenant('soak');
const body = JSON.stringify({ model: 'slow_50', messages: [{ role: 'user', content: 'hi' }] });

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : (s[Math.min(s.length - 1, Math.floor(s.length * p))] as number);
};

describe('load at capacity and at twice capacity (soak)', () => {
  let fake: FakeOpenAI;
  let gw: TestGateway;
  const rss: number[] = [];
  before(async () => {
    fake = await startFakeOpenAI();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin, GW_UPSTREAM_MAX_INFLIGHT: String(CAPACITY), GW_LOG_LEVEL: 'warn' } });
  });
  after(async () => {
    await gw.close();
    await fake.close();
    process.stdout.write(`RSS series (MiB): ${rss.map((b) => Math.round(b / 2 ** 20)).join(' ')}\n`);
  });

  const round = async (concurrency: number) => {
    const admitted: number[] = [];
    const shed: number[] = [];
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        const t = performance.now();
        const r = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-gw-key': devKey, 'x-gw-provider-key': 'sk' }, body });
        await r.arrayBuffer();
        (r.status === 503 ? shed : admitted).push(performance.now() - t);
        assert.ok(r.status === 200 || r.status === 503, `status ${r.status}`);
      }),
    );
    rss.push(process.memoryUsage().rss);
    return { admitted, shed };
  };

  // the admitted requests' p99 under load is read against this one's (the rule: within 2×)
  let unloadedP99 = 0;
  it('unloaded: sequential requests, the baseline', async () => {
    const ms: number[] = [];
    for (let i = 0; i < ROUNDS * 4; i++) {
      const r = await round(1);
      ms.push(...r.admitted);
    }
    unloadedP99 = pct(ms, 0.99);
    process.stdout.write(`unloaded: ${ms.length} requests, p50 ${pct(ms, 0.5).toFixed(1)} ms, p99 ${unloadedP99.toFixed(1)} ms\n`);
    assert.equal(ms.length, ROUNDS * 4);
  });

  for (const [name, factor] of [['at capacity', 1], ['at twice capacity', 2]] as const) {
    it(`${name}: every request answered 200 or 503 overloaded`, async () => {
      const admitted: number[] = [];
      const shed: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const r = await round(CAPACITY * factor);
        admitted.push(...r.admitted);
        shed.push(...r.shed);
      }
      const p99 = pct(admitted, 0.99);
      process.stdout.write(
        `${name}: ${admitted.length} admitted, p50 ${pct(admitted, 0.5).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms (${(p99 / unloadedP99).toFixed(2)}× unloaded); ${shed.length} shed, p50 ${pct(shed, 0.5).toFixed(2)} ms, p99 ${pct(shed, 0.99).toFixed(2)} ms\n`,
      );
      assert.ok(admitted.length > 0);
    });
  }
});
