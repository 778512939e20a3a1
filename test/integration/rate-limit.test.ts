import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFakeOpenAI } from '../fakes/openai.js';
import type { FakeVendor } from '../fakes/server.js';
import { devKeySecret, dropRedisPrefix, newRedisPrefix, startTestGateway, type Bootstrap, type TestGateway } from '../helpers/gateway.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const RPS_CAP = 30;
const REPLICAS = 4;
const SECONDS = 10;
const OFFERED_RPS = RPS_CAP * 3;
const devKey = devKeySecret('rate-limited');
const bootstrap: Bootstrap = { orgs: [{ org_id: 'rl', rps_cap: RPS_CAP }], dev_keys: [{ org_id: 'rl', dev_key_id: 'dk-rl', api_key: devKey }] };
const BODY = JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });

const call = (gw: TestGateway) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${devKey}`, 'x-gw-provider-key': 'sk-upstream', 'content-type': 'application/json' },
    body: BODY,
  }).then(async (r) => {
    await r.arrayBuffer();
    return r;
  });

describe(`rate limit across ${REPLICAS} replicas sharing one Redis`, () => {
  let fake: FakeVendor;
  const replicas: TestGateway[] = [];
  const redisPrefix = newRedisPrefix();
  before(async () => {
    fake = await startFakeOpenAI();
    // one after the other: the bootstrap is applied once and found by the others
    for (let i = 0; i < REPLICAS; i++) replicas.push(await startTestGateway({ bootstrap, redisPrefix, env: { GW_UPSTREAM_OPENAI: fake.origin } }));
  });
  after(async () => {
    for (const gw of replicas) await gw.close();
    await fake.close();
    await dropRedisPrefix(redisPrefix);
  });

  /**
   * `rps` requests a second for `seconds`, evenly paced, round-robin over the
   * replicas. `sendingS` is how long sending really took: on a loaded machine
   * the pacing slips, and the cap admits per second of that window.
   */
  async function load(rps: number, seconds: number): Promise<{ responses: Response[]; sendingS: number }> {
    const started = performance.now();
    const pending: Array<Promise<Response>> = [];
    for (let i = 0; i < rps * seconds; i++) {
      const wait = started + (i * 1000) / rps - performance.now();
      if (wait > 1) await sleep(wait);
      pending.push(call(replicas[i % REPLICAS]!));
    }
    const sendingS = (performance.now() - started) / 1000;
    return { responses: await Promise.all(pending), sendingS };
  }

  it(`admits ${RPS_CAP}/s ±10% over ${SECONDS} s of ${OFFERED_RPS}/s spread over the replicas; the rest are 429 with Retry-After`, async (t) => {
    const total = OFFERED_RPS * SECONDS;
    const { responses, sendingS } = await load(OFFERED_RPS, SECONDS);
    const admitted = responses.filter((r) => r.status === 200).length;
    const refused = responses.filter((r) => r.status === 429);
    assert.equal(admitted + refused.length, total, 'every answer is 200 or 429');
    for (const r of refused.slice(0, 20)) {
      assert.equal(r.headers.get('x-gw-error'), 'rate_limited');
      assert.ok(Number(r.headers.get('retry-after')) >= 1);
      assert.equal(r.headers.get('x-ratelimit-limit'), String(RPS_CAP));
      assert.equal(r.headers.get('x-ratelimit-remaining'), '0');
    }
    let leases = 0;
    let waits = 0;
    let leaseErrors = 0;
    for (const gw of replicas) {
      const text = await (await fetch(`${gw.url}/metrics`)).text();
      leases += Number(/^gw_rate_limit_lease_calls_total\{result="ok"\} (\d+)/m.exec(text)?.[1] ?? 0);
      waits += Number(/^gw_rate_limit_waits_total (\d+)/m.exec(text)?.[1] ?? 0);
      leaseErrors += Number(/^gw_rate_limit_lease_calls_total\{result="error"\} (\d+)/m.exec(text)?.[1] ?? 0);
    }
    const expected = Math.round(RPS_CAP * Math.max(SECONDS, sendingS));
    t.diagnostic(`offered ${total} in ${sendingS.toFixed(2)} s, admitted ${admitted} (expected ${expected}), ${leases} shared-bucket leases, ${waits} requests waited for one, ${leaseErrors} failed leases`);
    assert.ok(Math.abs(admitted - expected) <= expected * 0.1, `admitted ${admitted}, expected ${expected} ±10%`);
    assert.ok(waits < total / 20, `requests rarely wait on the shared bucket (${waits} of ${total})`);
  });

  it('refuses nothing from a tenant below its cap', async () => {
    // the previous burst is forgotten after a second: leased tokens lapse, the shared bucket refills
    await sleep(1500);
    const { responses } = await load(Math.floor(RPS_CAP * 0.8), 5);
    assert.deepEqual([...new Set(responses.map((r) => r.status))], [200]);
  });
});

describe('a 429 carries the rate-limit headers', () => {
  let fake: FakeVendor;
  let gw: TestGateway;
  const key = devKeySecret('rate-headers');
  before(async () => {
    fake = await startFakeOpenAI();
    gw = await startTestGateway({
      bootstrap: { orgs: [{ org_id: 'rl-headers', rps_cap: 1 }], dev_keys: [{ org_id: 'rl-headers', dev_key_id: 'dk-rl-headers', api_key: key }] },
      env: { GW_UPSTREAM_OPENAI: fake.origin },
    });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  it('x-ratelimit-limit, x-ratelimit-remaining and x-ratelimit-reset beside Retry-After', async () => {
    const send = () =>
      fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'x-gw-provider-key': 'sk-upstream', 'content-type': 'application/json' }, body: BODY });
    // the bucket of a 1/s cap holds two requests (two leases of one): four back to back meet a refusal
    const answers: Response[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await send();
      await r.arrayBuffer();
      answers.push(r);
    }
    const refused = answers.find((r) => r.status === 429);
    assert.ok(refused, `statuses ${answers.map((r) => r.status).join(', ')}`);
    assert.equal(refused.headers.get('x-gw-error'), 'rate_limited');
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    assert.equal(refused.headers.get('x-ratelimit-limit'), '1');
    assert.equal(refused.headers.get('x-ratelimit-remaining'), '0');
    const reset = Number(refused.headers.get('x-ratelimit-reset'));
    assert.ok(reset > 0 && reset <= Number(refused.headers.get('retry-after')), `x-ratelimit-reset ${reset}`);
  });
});
