import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai.js';
import { call } from '../helpers/api.js';
import { oneTenant, SECRETS_KEY, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { privateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { startGatewayBehindProxy } from '../helpers/redis-proxy.js';
import { eventually } from '../helpers/wait.js';

/**
 * Redis faults, PR tier: the request path does not wait on a slow, stopped,
 * killed or emptied Redis. Latencies are reported, not asserted, except one
 * generous bound that the old code (a relay waiting up to the 1 s metering
 * command timeout) does not meet.
 */
const SEQUENTIAL = 60;
const { bootstrap, devKey } = oneTenant('rfault');
const body = JSON.stringify({ model: 'gpt-4o', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });

async function timedCalls(url: string, n: number): Promise<{ statuses: Set<number>; p50: number; p99: number }> {
  const ms: number[] = [];
  const statuses = new Set<number>();
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const r = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-gw-key': devKey, 'x-gw-provider-key': 'sk-up' }, body });
    await r.arrayBuffer();
    ms.push(performance.now() - t);
    statuses.add(r.status);
  }
  ms.sort((a, b) => a - b);
  return { statuses, p50: ms[Math.floor(n / 2)] as number, p99: ms[Math.min(n - 1, Math.floor(n * 0.99))] as number };
}

const report = (what: string, r: { p50: number; p99: number }) => process.stdout.write(`${what}: relay p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms\n`);

/**
 * A fake vendor and a gateway whose Redis is behind a proxy the test can stall,
 * its org under a real rate cap (every request goes through the shared
 * bucket's leases, never refused by it) and a spend cap of `capUsd`.
 */
async function cappedBehindProxy(capUsd: number): Promise<{ fake: FakeOpenAI; behind: Awaited<ReturnType<typeof startGatewayBehindProxy>> }> {
  const fake = await startFakeOpenAI();
  const behind = await startGatewayBehindProxy({ ...bootstrap, orgs: [{ org_id: 'rfault', rps_cap: 1000 }] }, { GW_UPSTREAM_OPENAI: fake.origin });
  assert.equal((await call(behind.gw, '/api/v1/spend_cap/update', { key: devKey, body: { cap_usd: capUsd } })).status, 200);
  return { fake, behind };
}

describe('Redis stalled behind a proxy (spend cap and rate limit on the request path)', () => {
  let fake: FakeOpenAI;
  let behind: Awaited<ReturnType<typeof startGatewayBehindProxy>>;
  before(async () => {
    ({ fake, behind } = await cappedBehindProxy(1000));
  });
  after(async () => {
    await behind.close();
    await fake.close();
  });

  it('relayed calls keep answering while Redis is stalled, without waiting on it', async () => {
    const healthy = await timedCalls(behind.gw.url, SEQUENTIAL);
    report('Redis healthy', healthy);
    behind.proxy.hang();
    const stalled = await timedCalls(behind.gw.url, SEQUENTIAL);
    report('Redis stalled', stalled);
    behind.proxy.resume();
    assert.deepEqual(stalled.statuses, new Set([200]));
    assert.ok(stalled.p50 < 250, `p50 ${stalled.p50.toFixed(1)} ms while stalled: the request path waited on Redis`);
  });
});

describe('a spend-cap reservation Redis answers late', () => {
  let fake: FakeOpenAI;
  let behind: Awaited<ReturnType<typeof startGatewayBehindProxy>>;
  const capped = async () => {
    const r = await fetch(`${behind.gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-gw-key': devKey, 'x-gw-provider-key': 'sk-up' }, body });
    await r.arrayBuffer();
    return r.status;
  };
  before(async () => {
    // a cap of 0 refuses every call the metering store answers for
    ({ fake, behind } = await cappedBehindProxy(0));
  });
  after(async () => {
    await behind.close();
    await fake.close();
  });

  it('relays that call unmetered, and the calls after it wait for their reservations again once the second is over, however steady the traffic', async () => {
    assert.equal(await capped(), 402, 'the cap holds while Redis answers');
    behind.proxy.hang();
    assert.equal(await capped(), 200, 'a reservation past 250 ms relays the call unmetered');
    behind.proxy.resume();
    // back-to-back calls: each one relayed without waiting must not push the second of not waiting further on
    await eventually(async () => (await capped()) === 402, 'the cap to hold again once Redis answers');
  });
});

describe('a private Redis stopped (SIGSTOP), killed, and restarted empty', () => {
  let fake: FakeOpenAI;
  let redis: PrivateRedis;
  let gw: TestGateway;
  before(async () => {
    fake = await startFakeOpenAI();
    redis = await privateRedis();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin, GW_REDIS_URL: redis.url, GW_SECRETS_KEY: SECRETS_KEY, GW_WORKERS: '1' } });
    assert.equal((await call(gw, '/api/v1/spend_cap/update', { key: devKey, body: { cap_usd: 1000 } })).status, 200);
  });
  after(async () => {
    redis.resume();
    await gw.close();
    await redis.stop();
    await fake.close();
  });

  it('stopped: relays answer', async () => {
    redis.pause();
    const r = await timedCalls(gw.url, SEQUENTIAL);
    redis.resume();
    report('Redis SIGSTOPped', r);
    assert.deepEqual(r.statuses, new Set([200]));
  });

  it('killed: relays answer from the mirror', async () => {
    await redis.stop();
    const r = await timedCalls(gw.url, SEQUENTIAL);
    report('Redis killed', r);
    assert.deepEqual(r.statuses, new Set([200]));
  });

  it('restarted empty: the key still works and relays answer', async () => {
    await redis.restart();
    const r = await timedCalls(gw.url, SEQUENTIAL);
    report('Redis restarted empty', r);
    assert.deepEqual(r.statuses, new Set([200]), 'the developer key is not lost with Redis');
  });
});
