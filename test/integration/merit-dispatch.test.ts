import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startFakeAnthropic } from '../fakes/anthropic.js';
import { startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.js';
import { completion } from '../fakes/openai.js';
import { sendJson, startFakeVendor, type FakeVendor } from '../fakes/server.js';
import { call, type Answer } from '../helpers/api.js';
import { redisKeys } from '../../src/stores/redis/prefixes.js';
import { bootstrapFile, devKeySecret, dropRedisPrefix, newRedisPrefix, SECRETS_KEY, startTestGateway, TEST_REDIS_ENV, testRedis, type Bootstrap, type TestGateway } from '../helpers/gateway.js';
import { spawnGateway, stopGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { eventually, freePort } from '../helpers/wait.js';

/** A failure with the vendor's own headers (its retry hints). */
interface Failure {
  status: 429 | 503;
  headers: Record<string, string>;
}

/** What the fake does for calls carrying one stored key: answer, fail with a status (and headers), hold until released, or break a stream after its first bytes. */
type Script = 'ok' | 429 | 500 | 503 | Failure | 'hold' | 'break';

/**
 * A fake OpenAI whose answer depends on the key that reached it
 * (`Authorization: Bearer <key>`), in OpenAI's own wire format: several
 * stored keys of one org all go to this one origin, and each key is
 * scripted on its own.
 */
interface KeyedFake extends FakeVendor {
  script(key: string, s: Script): void;
  /** the keys of the calls received, in order */
  keys(): string[];
  /** answers every held call */
  release(): void;
}

async function startKeyedFake(): Promise<KeyedFake> {
  const scripts = new Map<string, Script>();
  let held: Array<() => void> = [];
  const vendor = await startFakeVendor(async (req, res) => {
    const key = String(req.headers['authorization']).replace(/^Bearer /, '');
    const body = JSON.parse(req.body.toString('utf8')) as { model: string; stream?: boolean };
    const script = scripts.get(key) ?? 'ok';
    if (typeof script === 'number') {
      const type = script === 429 ? 'rate_limit_exceeded' : 'server_error';
      return sendJson(res, script, { error: { message: `scripted ${script}`, type, param: null, code: null } }, script === 429 ? { 'retry-after': '20' } : {});
    }
    if (typeof script === 'object') return sendJson(res, script.status, { error: { message: `scripted ${script.status}`, type: 'rate_limit_exceeded', param: null, code: null } }, script.headers);
    if (script === 'hold') await new Promise<void>((r) => held.push(r));
    if (script === 'break') return breakStream(res, body.model);
    sendJson(res, 200, completion(body.model, `served with ${key}`));
  });
  return Object.assign(vendor, {
    script: (key: string, s: Script) => void scripts.set(key, s),
    keys: () => vendor.received.map((r) => String(r.headers['authorization']).replace(/^Bearer /, '')),
    release() {
      const waiting = held;
      held = [];
      for (const r of waiting) r();
    },
  });
}

/** a chat-completions stream whose first chunk goes out, then the connection drops */
function breakStream(res: ServerResponse, model: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const chunk = { id: 'chatcmpl-break', object: 'chat.completion.chunk', created: 1_700_000_000, model, choices: [{ index: 0, delta: { role: 'assistant', content: 'Hel' }, finish_reason: null }] };
  res.write(`data: ${JSON.stringify(chunk)}\n\n`, () => res.destroy());
}

const ORGS = ['m429', 'm500', 'mbreak', 'mlimit', 'mlast', 'mapi', 'mrefused', 'mshared', 'mhint_s', 'mhint_ms', 'mhint_date', 'mhint_cap', 'mfull', 'mfallback', 'munnamed'] as const;
type Org = (typeof ORGS)[number];
const KEY: Record<Org, string> = Object.fromEntries(ORGS.map((o) => [o, devKeySecret(`merit-${o}`)])) as Record<Org, string>;
const BOOT: Bootstrap = { orgs: ORGS.map((org_id) => ({ org_id, rps_cap: 1000 })), dev_keys: ORGS.map((org_id) => ({ org_id, api_key: KEY[org_id] })) };

const store = (gw: TestGateway, org: Org, body: Record<string, unknown>) => call(gw, '/api/v1/vendor_key/create', { key: KEY[org], body: { provider: 'openai', ...body } });
const chat = (gw: TestGateway, org: Org, stream = false) => call(gw, '/v1/chat/completions', { key: KEY[org], body: { model: 'gpt-4o', stream, messages: [{ role: 'user', content: 'hi' }] } });
const raw = (gw: TestGateway, org: Org, stream: boolean) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY[org]}` },
    body: JSON.stringify({ model: 'gpt-4o', stream, messages: [{ role: 'user', content: 'hi' }] }),
  });

interface Decision {
  dispatch: { served: string | null; steps: Array<{ destination: string; outcome: string }> } | null;
  refusal: { stage: string; type: string } | null;
  skills: unknown[];
}
async function recordOf(gw: TestGateway, org: Org, answer: Answer | Response): Promise<{ request: Record<string, unknown>; decision: Decision }> {
  const id = answer.headers.get('x-gw-request-id');
  let found: Answer | undefined;
  await eventually(async () => (found = await call(gw, `/api/v1/tenant/request/${id}`, { key: KEY[org] })).status === 200, `the row of ${id}`);
  return (found as Answer).json as { request: Record<string, unknown>; decision: Decision };
}

const metric = async (gw: TestGateway, outcome: string): Promise<number> => {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`gw_dispatch_destinations_total{provider="openai",outcome="${outcome}"}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
};

describe('merit-order dispatch over an org\'s stored keys', () => {
  let fake: KeyedFake;
  let gw: TestGateway;

  before(async () => {
    fake = await startKeyedFake();
    gw = await startTestGateway({ redis: true, bootstrap: BOOT, env: { GW_UPSTREAM_OPENAI: fake.origin, GW_METRICS_PUBLIC: '1' } });
  });
  after(async () => {
    await gw?.close();
    await fake?.close();
  });

  it('stores several keys of a provider with merit, last resort and limit; settings list them; a named key is deleted by name', async () => {
    const created = await store(gw, 'mapi', { api_key: 'sk-api-eu-0001', name: 'eu', merit: 2.5, last_resort: true, max_inflight: 4 });
    assert.equal(created.status, 200, JSON.stringify(created.json));
    assert.deepEqual(created.json, { status: 'success', provider: 'openai', credential_kind: 'api_key', key_hint: '0001', name: 'eu', merit: 2.5, last_resort: true, max_inflight: 4 });
    const plain = await store(gw, 'mapi', { api_key: 'sk-api-plain-0002' });
    assert.deepEqual(plain.json, { status: 'success', provider: 'openai', credential_kind: 'api_key', key_hint: '0002' }, 'a key stored as before answers as before');
    const settings = await call(gw, '/api/v1/settings', { key: KEY.mapi });
    assert.deepEqual(settings.json['vendor_keys'], [
      { provider: 'openai', credential_kind: 'api_key', key_hint: '0002' },
      { provider: 'openai', credential_kind: 'api_key', key_hint: '0001', name: 'eu', merit: 2.5, last_resort: true, max_inflight: 4 },
    ]);
    assert.equal((await store(gw, 'mapi', { api_key: 'sk-x', name: 'Not A Name' })).status, 400);
    const deleted = await call(gw, '/api/v1/vendor_key/delete', { key: KEY.mapi, body: { provider: 'openai', name: 'eu' } });
    assert.deepEqual(deleted.json, { status: 'success', provider: 'openai', name: 'eu', deleted: true });
    assert.equal(((await call(gw, '/api/v1/settings', { key: KEY.mapi })).json['vendor_keys'] as unknown[]).length, 1);
  });

  for (const [org, status, outcome] of [['m429', 429, 'rate_limited'], ['m500', 500, 'server_error']] as const) {
    it(`the cheapest key answering ${status}: the next serves, the caller sees one clean 200, and the failed key cools down`, async () => {
      const [first, second] = [`sk-${org}-cheap`, `sk-${org}-dear`];
      fake.script(first, status);
      assert.equal((await store(gw, org, { api_key: second, name: 'dear', merit: 5 })).status, 200);
      assert.equal((await store(gw, org, { api_key: first, name: 'cheap', merit: 1 })).status, 200);
      const before = fake.received.length;
      const failedBefore = await metric(gw, outcome);
      const answer = await chat(gw, org);
      assert.equal(answer.status, 200, JSON.stringify(answer.json));
      assert.match(JSON.stringify(answer.json), new RegExp(`served with ${second}`));
      assert.deepEqual(fake.keys().slice(before), [first, second]);
      const { request, decision } = await recordOf(gw, org, answer);
      assert.equal(request['destination_id'], 'openai/dear');
      assert.deepEqual(decision.dispatch, { served: 'openai/dear', steps: [{ destination: 'openai/cheap', outcome }, { destination: 'openai/dear', outcome: 'served' }] });
      assert.equal(await metric(gw, outcome), failedBefore + 1);

      // cooling down: the next call goes to the dearer key first, and says why the cheaper one was passed over
      const again = await chat(gw, org);
      assert.equal(again.status, 200);
      assert.deepEqual(fake.keys().slice(before + 2), [second]);
      assert.deepEqual((await recordOf(gw, org, again)).decision.dispatch?.steps, [{ destination: 'openai/dear', outcome: 'served' }, { destination: 'openai/cheap', outcome: 'cooling' }]);
    });
  }

  // GW_DESTINATION_COOLDOWN_S is 30 here; a vendor's longer hint lengthens the cool-down, up to 600 s
  const HINTS: Array<[Org, string, () => Failure, number]> = [
    ['mhint_s', 'a 429 with Retry-After: 120', () => ({ status: 429, headers: { 'retry-after': '120' } }), 120_000],
    ['mhint_ms', 'a 429 with retry-after-ms: 90000 (beside Retry-After: 90)', () => ({ status: 429, headers: { 'retry-after-ms': '90000', 'retry-after': '90' } }), 90_000],
    ['mhint_date', 'a 503 with Retry-After an HTTP date 240 s ahead', () => ({ status: 503, headers: { 'retry-after': new Date(Date.now() + 240_000).toUTCString() } }), 240_000],
    ['mhint_cap', 'a 429 with Retry-After: 86400 (past the 600 s bound)', () => ({ status: 429, headers: { 'retry-after': '86400' } }), 600_000],
  ];
  for (const [org, what, failure, ms] of HINTS) {
    it(`${what} cools the key down for ${ms / 1000} s, shared through Redis`, async () => {
      const [first, second] = [`sk-${org}-cheap`, `sk-${org}-dear`];
      fake.script(first, failure());
      await store(gw, org, { api_key: first, name: 'cheap', merit: 1 });
      await store(gw, org, { api_key: second, name: 'dear', merit: 2 });
      const answer = await chat(gw, org);
      assert.equal(answer.status, 200, JSON.stringify(answer.json));
      const redis = testRedis();
      try {
        const key = redisKeys(gw.redisPrefix as string).coolDown(org, 'openai/cheap');
        let left = -2;
        // the cool-down is written without the call waiting for it
        await eventually(async () => (left = await redis.pttl(key)) > 0, 'the cool-down in Redis');
        assert.ok(left > 30_000 && left <= ms, `${left} ms left, expected more than the 30 s default and at most ${ms}`);
        // an HTTP date has whole seconds: it names a moment up to 1 s before the one the fake computed
        if (org !== 'mhint_date') assert.ok(left > ms - 60_000, `${left} ms left of ${ms}`);
      } finally {
        redis.disconnect();
      }
    });
  }

  it('a failure after bytes reached the caller is not retried on another key', async () => {
    const [first, second] = ['sk-mbreak-cheap', 'sk-mbreak-dear'];
    fake.script(first, 'break');
    await store(gw, 'mbreak', { api_key: first, name: 'cheap', merit: 1 });
    await store(gw, 'mbreak', { api_key: second, name: 'dear', merit: 2 });
    const before = fake.received.length;
    const res = await raw(gw, 'mbreak', true);
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.match(text, /Hel/);
    assert.deepEqual(fake.keys().slice(before), [first], 'the dearer key was never called');
    const { decision } = await recordOf(gw, 'mbreak', res);
    assert.deepEqual(decision.dispatch?.steps, [{ destination: 'openai/cheap', outcome: 'served' }]);
  });

  it('a key at its concurrency limit is skipped', async () => {
    const [first, second] = ['sk-mlimit-cheap', 'sk-mlimit-dear'];
    fake.script(first, 'hold');
    await store(gw, 'mlimit', { api_key: first, name: 'cheap', merit: 1, max_inflight: 1 });
    await store(gw, 'mlimit', { api_key: second, name: 'dear', merit: 2 });
    const before = fake.received.length;
    const held = chat(gw, 'mlimit');
    await eventually(() => fake.received.length > before, 'the first call to reach the cheap key');
    const second_ = await chat(gw, 'mlimit');
    assert.equal(second_.status, 200);
    assert.deepEqual(fake.keys().slice(before), [first, second]);
    assert.deepEqual((await recordOf(gw, 'mlimit', second_)).decision.dispatch?.steps, [
      { destination: 'openai/cheap', outcome: 'at_limit' },
      { destination: 'openai/dear', outcome: 'served' },
    ]);
    fake.release();
    assert.equal((await held).status, 200);
  });

  it('the last resort serves only when every other key failed or is cooling down', async () => {
    const [a, b, last] = ['sk-mlast-a', 'sk-mlast-b', 'sk-mlast-last'];
    fake.script(a, 429);
    // the last resort is the cheapest, and still tried last
    await store(gw, 'mlast', { api_key: last, name: 'last', merit: 0, last_resort: true });
    await store(gw, 'mlast', { api_key: a, name: 'a', merit: 1 });
    await store(gw, 'mlast', { api_key: b, name: 'b', merit: 2 });
    let before = fake.received.length;
    assert.equal((await chat(gw, 'mlast')).status, 200);
    assert.deepEqual(fake.keys().slice(before), [a, b], 'b serves while it can');
    fake.script(b, 503);
    before = fake.received.length;
    const answer = await chat(gw, 'mlast');
    assert.equal(answer.status, 200);
    assert.deepEqual(fake.keys().slice(before), [b, last], 'a cools down; b fails; then the last resort');
    assert.deepEqual((await recordOf(gw, 'mlast', answer)).decision.dispatch, {
      served: 'openai/last',
      steps: [
        { destination: 'openai/b', outcome: 'server_error' },
        { destination: 'openai/last', outcome: 'served' },
        { destination: 'openai/a', outcome: 'cooling' },
      ],
    });
  });
});

describe('merit-order dispatch when the keys\' upstream origin is at GW_UPSTREAM_MAX_INFLIGHT', () => {
  let fake: KeyedFake;
  let gw: TestGateway;
  before(async () => {
    fake = await startKeyedFake();
    gw = await startTestGateway({ redis: true, bootstrap: BOOT, env: { GW_UPSTREAM_OPENAI: fake.origin, GW_UPSTREAM_MAX_INFLIGHT: '1' } });
  });
  after(async () => {
    fake.release();
    await gw?.close();
    await fake?.close();
  });

  it('every key\'s origin full: the call is shed before the skills, as dispatch would shed it, with no key tried', async () => {
    const [a, b] = ['sk-mfull-a', 'sk-mfull-b'];
    fake.script(a, 'hold');
    await store(gw, 'mfull', { api_key: a, name: 'a', merit: 1 });
    await store(gw, 'mfull', { api_key: b, name: 'b', merit: 2 });
    const held = chat(gw, 'mfull');
    await eventually(() => fake.received.length === 1, 'the first call holds the origin both keys go to');
    const shed = await chat(gw, 'mfull');
    assert.equal(shed.status, 503);
    assert.equal((shed.json['error'] as { type: string }).type, 'overloaded');
    assert.equal(shed.headers.get('x-gw-error'), null);
    assert.deepEqual([...shed.headers.keys()].filter((h) => h.startsWith('x-gw-skill-')), [], 'no skill ran for it');
    assert.equal(fake.received.length, 1, 'nothing more was sent');
    const { decision } = await recordOf(gw, 'mfull', shed);
    assert.deepEqual(decision.refusal, { stage: 'dispatch', type: 'overloaded' });
    assert.deepEqual([decision.skills, decision.dispatch], [[], null], 'no skill ran and no key was tried');
    fake.release();
    assert.equal((await held).status, 200);
  });
});

describe('an org\'s only stored key of a provider, with a max_inflight', () => {
  let fake: KeyedFake;
  let anthropic: FakeVendor;
  let gw: TestGateway;
  const key = 'sk-mfallback-only';
  const unnamedKey = 'sk-munnamed-only';
  before(async () => {
    [fake, anthropic] = await Promise.all([startKeyedFake(), startFakeAnthropic()]);
    gw = await startTestGateway({ redis: true, bootstrap: BOOT, env: { GW_UPSTREAM_OPENAI: fake.origin, GW_UPSTREAM_MSGVENDOR: anthropic.origin } });
    await store(gw, 'mfallback', { api_key: key, name: 'only', merit: 1, max_inflight: 1 });
    assert.equal((await store(gw, 'munnamed', { api_key: unnamedKey, max_inflight: 1 })).status, 200);
    assert.equal((await call(gw, '/api/v1/vendor_key/create', { key: KEY.mfallback, body: { provider: 'msgvendor', api_key: 'sk-ant-mfallback' } })).status, 200);
  });
  after(async () => {
    fake.release();
    await gw?.close();
    await Promise.all([fake?.close(), anthropic?.close()]);
  });

  /** a call held at the only openai key, which fills it; the key would answer any other call at once */
  async function fill(org: Org = 'mfallback', only = key): Promise<{ held: Promise<Answer> }> {
    const before = fake.received.length;
    fake.script(only, 'hold');
    const held = chat(gw, org);
    await eventually(() => fake.received.length === before + 1, 'a call holding the only openai key');
    fake.script(only, 'ok');
    // in an object: an async function returning the promise itself would wait for it
    return { held };
  }

  it('is held to it: a call past it is answered 503 overloaded, and nothing more is sent', async () => {
    const { held } = await fill();
    const sent = fake.received.length;
    const over = await chat(gw, 'mfallback');
    assert.equal(over.status, 503);
    assert.equal((over.json['error'] as { type: string }).type, 'overloaded');
    assert.equal(fake.received.length, sent);
    fake.release();
    assert.equal((await held).status, 200);
  });

  it('the unnamed key alone is held to it too: a call past it is answered 503 overloaded, and nothing more is sent', async () => {
    const { held } = await fill('munnamed', unnamedKey);
    const sent = fake.received.length;
    const over = await chat(gw, 'munnamed');
    assert.equal(over.status, 503, JSON.stringify(over.json));
    assert.equal((over.json['error'] as { type: string }).type, 'overloaded');
    assert.equal(fake.received.length, sent);
    fake.release();
    assert.equal((await held).status, 200);
  });

  it('at it, a /v1/execute call goes on to its fallback: nothing was sent to the first candidate', async () => {
    const { held } = await fill();
    const sent = fake.received.length;
    const r = await call(gw, '/v1/execute', { key: KEY.mfallback, body: { input: { messages: [{ role: 'user', content: 'hi' }] }, target: { model: 'gpt-4o', fallbacks: ['claude-sonnet-4-5'] } } });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json['model'], 'claude-sonnet-4-5');
    assert.deepEqual((r.json['trace'] as { route: unknown }).route, { model: 'claude-sonnet-4-5', reason: 'fallback 1' });
    assert.equal(fake.received.length, sent, 'nothing more went to the openai key');
    assert.equal(anthropic.received.length, 1);
    fake.release();
    assert.equal((await held).status, 200);
  });
});

describe('merit-order dispatch when no key can be connected to', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway({ redis: true, bootstrap: BOOT, env: { GW_UPSTREAM_OPENAI: `http://127.0.0.1:${await freePort()}` } });
  });
  after(() => gw?.close());

  it('each key is tried once in merit order and the caller gets one clean 502', async () => {
    await store(gw, 'mrefused', { api_key: 'sk-refused-a', name: 'a', merit: 1 });
    await store(gw, 'mrefused', { api_key: 'sk-refused-b', name: 'b', merit: 2 });
    const answer = await chat(gw, 'mrefused');
    assert.equal(answer.status, 502);
    assert.equal((answer.json['error'] as { type: string }).type, 'upstream_unavailable');
    assert.deepEqual((await recordOf(gw, 'mrefused', answer)).decision.dispatch, {
      served: null,
      steps: [
        { destination: 'openai/a', outcome: 'connect_failed' },
        { destination: 'openai/b', outcome: 'connect_failed' },
      ],
    });
  });
});

describe('two gateway processes on one Redis share a cool-down', () => {
  const prefix = newRedisPrefix();
  let fake: KeyedFake;
  let a: GatewayProcess;
  let b: GatewayProcess;
  const asGw = (p: GatewayProcess) => ({ url: `http://127.0.0.1:${p.port}` }) as TestGateway;

  before(async () => {
    fake = await startKeyedFake();
    const env = { ...TEST_REDIS_ENV, GW_REDIS_PREFIX: prefix, GW_SECRETS_KEY: SECRETS_KEY, GW_WORKERS: '1', GW_UPSTREAM_OPENAI: fake.origin, GW_LOG_LEVEL: 'info' };
    a = await spawnGateway({ ...env, GW_BOOTSTRAP: await bootstrapFile(BOOT) });
    b = await spawnGateway(env);
  });
  after(async () => {
    await Promise.all([a, b].filter(Boolean).map(stopGateway));
    await fake?.close();
    await dropRedisPrefix(prefix);
  });

  it('a key that failed through A is passed over by B on its first call', async () => {
    const [cheap, dear] = ['sk-mshared-cheap', 'sk-mshared-dear'];
    fake.script(cheap, 429);
    assert.equal((await store(asGw(a), 'mshared', { api_key: cheap, name: 'cheap', merit: 1 })).status, 200);
    assert.equal((await store(asGw(a), 'mshared', { api_key: dear, name: 'dear', merit: 2 })).status, 200);
    await eventually(async () => ((await call(asGw(b), '/api/v1/settings', { key: KEY.mshared })).json['vendor_keys'] as unknown[] | undefined)?.length === 2, 'B to know both keys');
    assert.equal((await chat(asGw(a), 'mshared')).status, 200);
    assert.deepEqual(fake.keys(), [cheap, dear]);
    assert.equal((await chat(asGw(b), 'mshared')).status, 200);
    assert.deepEqual(fake.keys(), [cheap, dear, dear], 'B never called the key cooling down');
  });
});

describe('merit-order dispatch under data residency (GW_ALLOWED_REGIONS)', () => {
  const orgs = ['mregion', 'mnoregion'] as const;
  const keyOf = (org: (typeof orgs)[number]) => devKeySecret(`merit-${org}`);
  let fake: FakeBedrock;
  let gw: TestGateway;
  before(async () => {
    fake = await startFakeBedrock();
    const boot: Bootstrap = { orgs: orgs.map((org_id) => ({ org_id, rps_cap: 1000 })), dev_keys: orgs.map((org_id) => ({ org_id, api_key: keyOf(org_id) })) };
    gw = await startTestGateway({ redis: true, bootstrap: boot, env: { GW_UPSTREAM_CLOUDY: fake.origin, GW_ALLOWED_REGIONS: 'eu-*' } });
  });
  after(async () => {
    await gw?.close();
    await fake?.close();
  });
  const storeCloudy = (org: (typeof orgs)[number], body: Record<string, unknown>) =>
    call(gw, '/api/v1/vendor_key/create', { key: keyOf(org), body: { provider: 'cloudy', credential_kind: 'api_key', ...body } });
  const converse = (org: (typeof orgs)[number]) =>
    call(gw, `/cloudy/model/${encodeURIComponent('anthropic.claude-3-5-haiku-20241022-v1:0')}/converse`, { key: keyOf(org), body: { messages: [{ role: 'user', content: [{ text: 'hi' }] }] } });
  const bearers = (from: number) => fake.received.slice(from).map((r) => String(r.headers['authorization']));

  it('a stored key outside the allowed regions is passed over, and the next allowed key serves', async () => {
    assert.equal((await storeCloudy('mregion', { api_key: 'bedrock-us-key', name: 'us', merit: 1, region: 'us-east-1' })).status, 200);
    assert.equal((await storeCloudy('mregion', { api_key: 'bedrock-eu-key', name: 'eu', merit: 2, region: 'eu-west-1' })).status, 200);
    const before = fake.received.length;
    const answer = await converse('mregion');
    assert.equal(answer.status, 200, JSON.stringify(answer.json));
    assert.deepEqual(bearers(before), ['Bearer bedrock-eu-key'], 'the key outside the regions was sent nothing');
    assert.match(fake.received.at(-1)?.url ?? '', /converse/);
    const id = answer.headers.get('x-gw-request-id');
    let found: Answer | undefined;
    await eventually(async () => (found = await call(gw, `/api/v1/tenant/request/${id}`, { key: keyOf('mregion') })).status === 200, `the row of ${id}`);
    assert.deepEqual((found?.json['decision'] as Decision).dispatch, {
      served: 'cloudy/eu',
      steps: [
        { destination: 'cloudy/us', outcome: 'region_excluded' },
        { destination: 'cloudy/eu', outcome: 'served' },
      ],
    });
    // passed over, not failed: the key does not cool down, so the next call passes it over the same way
    const again = await converse('mregion');
    assert.equal(again.status, 200);
  });

  it('when no stored key is in an allowed region the call is refused with 451, sending nothing', async () => {
    await storeCloudy('mnoregion', { api_key: 'bedrock-us1-key', name: 'a', merit: 1, region: 'us-east-1' });
    await storeCloudy('mnoregion', { api_key: 'bedrock-us2-key', name: 'b', merit: 2, region: 'us-west-2' });
    const before = fake.received.length;
    const answer = await converse('mnoregion');
    assert.equal(answer.status, 451, JSON.stringify(answer.json));
    assert.equal(answer.headers.get('x-gw-error'), 'forbidden');
    assert.equal(fake.received.length, before);
  });
});
