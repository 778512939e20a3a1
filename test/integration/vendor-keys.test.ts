import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { redisKeys } from '../../src/stores/redis/prefixes.js';
import { keyId } from '../../src/tenancy/crypto.js';
import { startFakeAnthropic } from '../fakes/anthropic.js';
import { startFakeAzure } from '../fakes/azure.js';
import { startFakeBedrock } from '../fakes/bedrock.js';
import { startFakeGemini } from '../fakes/gemini.js';
import { startFakeOpenAI } from '../fakes/openai.js';
import type { FakeVendor } from '../fakes/server.js';
import { call, errorMessage, startReplicaPairOverFakeOpenAI, type ReplicaPairOverFake } from '../helpers/api.js';
import { startGatewayBehindProxy } from '../helpers/redis-proxy.js';
import { dropRedisPrefix, newRedisPrefix, SECRETS_KEY, devKeySecret, startTestGateway, testRedis, type Bootstrap, type TestGateway } from '../helpers/gateway.js';
import { scratchDir } from '../helpers/scratch.js';

const ACME = devKeySecret('vk-acme');
const OTHER = devKeySecret('vk-other');
const BOOT: Bootstrap = {
  orgs: [{ org_id: 'acme' }, { org_id: 'other' }],
  dev_keys: [
    { org_id: 'acme', dev_key_id: 'dk-acme', api_key: ACME },
    { org_id: 'other', dev_key_id: 'dk-other', api_key: OTHER },
  ],
};
const chat = (gw: TestGateway, key: string, headers: Record<string, string> = {}) =>
  call(gw, '/v1/chat/completions', { key, headers, body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] } });
const store = (gw: TestGateway, body: Record<string, unknown>, key = ACME) => call(gw, '/api/v1/vendor_key/create', { key, body });

for (const redis of [false, true]) {
  describe(`stored provider keys (${redis ? 'redis' : 'embedded'} store)`, () => {
    let openai: FakeVendor;
    let anthropic: FakeVendor;
    let gemini: FakeVendor;
    let azure: FakeVendor;
    let bedrock: Awaited<ReturnType<typeof startFakeBedrock>>;
    let gw: TestGateway;

    before(async () => {
      [openai, anthropic, gemini, azure, bedrock] = await Promise.all([
        startFakeOpenAI(),
        startFakeAnthropic(),
        startFakeGemini(),
        startFakeAzure(),
        startFakeBedrock({ AKIASTOREDPAIR00001: 'stored-secret-access-key' }),
      ]);
      gw = await startTestGateway({
        redis,
        bootstrap: BOOT,
        env: {
          GW_UPSTREAM_OPENAI: openai.origin,
          GW_UPSTREAM_MSGVENDOR: anthropic.origin,
          GW_UPSTREAM_GENVENDOR: gemini.origin,
          GW_UPSTREAM_CLOUDX: azure.origin,
          GW_UPSTREAM_CLOUDY: bedrock.origin,
        },
      });
    });
    after(async () => {
      await gw.close();
      await Promise.all([openai, anthropic, gemini, azure, bedrock].map((f) => f.close()));
    });

    it('stores an openai key, answers only its last 4 characters, and the relay uses it with no pass-through header', async () => {
      const stored = await store(gw, { provider: 'openai', api_key: 'sk-stored-openai-1234' });
      assert.equal(stored.status, 200);
      assert.deepEqual(stored.json, { status: 'success', provider: 'openai', credential_kind: 'api_key', key_hint: '1234' });
      const before = openai.received.length;
      const reply = await chat(gw, ACME);
      assert.equal(reply.status, 200);
      assert.equal(openai.received[before]?.headers['authorization'], 'Bearer sk-stored-openai-1234');
    });

    it('pass-through beats the stored key', async () => {
      const before = openai.received.length;
      assert.equal((await chat(gw, ACME, { 'x-gw-provider-key': 'sk-passthrough-9' })).status, 200);
      assert.equal(openai.received[before]?.headers['authorization'], 'Bearer sk-passthrough-9');
    });

    it('a stored key is the org’s own: another org still has none (402)', async () => {
      const reply = await chat(gw, OTHER);
      assert.equal(reply.status, 402);
      assert.equal(reply.headers.get('x-gw-error'), 'onboarding_incomplete');
    });

    it('serves msgvendor, genvendor, cloudx and cloudy from stored keys, each the way its vendor takes it', async () => {
      assert.equal((await store(gw, { provider: 'msgvendor', api_key: 'sk-ant-stored-aaaa' })).status, 200);
      assert.equal((await store(gw, { provider: 'genvendor', api_key: 'AIza-stored-gggg' })).status, 200);
      assert.equal((await store(gw, { provider: 'cloudx', api_key: 'azure-stored-xxxx', endpoint: 'https://acme.openai.azure.com' })).status, 200);
      const pair = await store(gw, { provider: 'cloudy', api_key: 'AKIASTOREDPAIR00001:stored-secret-access-key', region: 'us-west-2' });
      assert.deepEqual(pair.json, { status: 'success', provider: 'cloudy', credential_kind: 'access_key', key_hint: '-key' });

      const n = { a: anthropic.received.length, g: gemini.received.length, x: azure.received.length, b: bedrock.signatures.length };
      const msg = await call(gw, '/msgvendor/v1/messages', {
        headers: { 'x-api-key': ACME, 'anthropic-version': '2023-06-01' },
        body: { model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(msg.status, 200);
      assert.equal(anthropic.received[n.a]?.headers['x-api-key'], 'sk-ant-stored-aaaa');

      const gen = await call(gw, '/genvendor/v1beta/models/gemini-2.5-flash:generateContent', {
        headers: { 'x-goog-api-key': ACME },
        body: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] },
      });
      assert.equal(gen.status, 200);
      assert.equal(gemini.received[n.g]?.headers['x-goog-api-key'], 'AIza-stored-gggg');

      const az = await call(gw, '/cloudx/compat/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21', {
        headers: { 'api-key': ACME },
        body: { messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(az.status, 200);
      assert.equal(azure.received[n.x]?.headers['api-key'], 'azure-stored-xxxx');

      const conv = await call(gw, `/cloudy/model/${encodeURIComponent('amazon.nova-lite-v1:0')}/converse`, {
        key: ACME,
        body: { messages: [{ role: 'user', content: [{ text: 'hi' }] }] },
      });
      assert.equal(conv.status, 200);
      const sig = bedrock.signatures[n.b];
      assert.ok(sig, 'the stored pair signs the call');
      assert.equal(sig.valid, true);
      assert.equal(sig.accessKeyId, 'AKIASTOREDPAIR00001');
      assert.equal(sig.region, 'us-west-2');
    });

    it('cloudy credential_kind api_key stores the cloud API key, sent as a bearer', async () => {
      const stored = await store(gw, { provider: 'cloudy', api_key: 'bedrock-api-key-zzzz', credential_kind: 'api_key' }, OTHER);
      assert.deepEqual(stored.json, { status: 'success', provider: 'cloudy', credential_kind: 'api_key', key_hint: 'zzzz' });
      const before = bedrock.received.length;
      const conv = await call(gw, `/cloudy/model/${encodeURIComponent('amazon.nova-lite-v1:0')}/converse`, { key: OTHER, body: { messages: [{ role: 'user', content: [{ text: 'hi' }] }] } });
      assert.equal(conv.status, 200);
      assert.equal(bedrock.received[before]?.headers['authorization'], 'Bearer bedrock-api-key-zzzz');
    });

    it('refuses what a provider cannot take (400 naming the field)', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ provider: 'cloudy', api_key: 'not-a-pair' }, 'api_key'],
        [{ provider: 'cloudy', api_key: 'AKIASTOREDPAIR00001:s', region: 'mars' }, 'region'],
        [{ provider: 'openai', api_key: 'sk-x', endpoint: 'https://x.openai.azure.com' }, 'endpoint'],
        [{ provider: 'openai', api_key: 'sk-x', credential_kind: 'oauth_token' }, 'credential_kind'],
        [{ provider: 'genvendor_vertex', api_key: 'ya29.token' }, 'project'],
        [{ provider: 'genvendor_vertex', api_key: 'ya29.token', project: 'my-project', location: 'evil.example.com/' }, 'location'],
        [{ provider: 'nope', api_key: 'x' }, 'provider'],
        [{ provider: 'openai', api_key: 'has space' }, 'api_key'],
      ];
      for (const [body, field] of cases) {
        const r = await store(gw, body);
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.headers.get('x-gw-error'), 'request_error');
        assert.match(errorMessage(r), new RegExp(field));
      }
    });

    it('takes short access-key ids such as AWS\'s own test id AKIDEXAMPLE', async () => {
      const r = await store(gw, { provider: 'cloudy', api_key: 'AKIDEXAMPLE:wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', region: 'us-east-1' });
      assert.equal(r.status, 200);
    });

    it('deletes: the next call without a pass-through key is 402', async () => {
      const del = await call(gw, '/api/v1/vendor_key/delete', { key: OTHER, body: { provider: 'cloudy' } });
      assert.deepEqual(del.json, { status: 'success', provider: 'cloudy', deleted: true });
      const conv = await call(gw, `/cloudy/model/${encodeURIComponent('amazon.nova-lite-v1:0')}/converse`, { key: OTHER, body: { messages: [{ role: 'user', content: [{ text: 'hi' }] }] } });
      assert.equal(conv.status, 402);
      assert.equal(conv.headers.get('x-gw-error'), 'onboarding_incomplete');
    });

    it('naming another tenant is 403 forbidden; no key or a foreign secret is 401', async () => {
      const foreign = await store(gw, { provider: 'openai', api_key: 'sk-x', tenant_id: 'other' });
      assert.equal(foreign.status, 403);
      assert.equal(foreign.headers.get('x-gw-error'), 'forbidden');
      const none = await call(gw, '/api/v1/vendor_key/create', { body: { provider: 'openai', api_key: 'sk-x' } });
      assert.equal(none.status, 401);
      assert.equal(none.headers.get('x-gw-error'), 'invalid_developer_key');
      const unknown = await store(gw, { provider: 'openai', api_key: 'sk-x' }, devKeySecret('nobody'));
      assert.equal(unknown.status, 401);
    });
  });
}

describe('cloudx endpoint allowlist without an origin override', () => {
  let gw: TestGateway;
  before(async () => (gw = await startTestGateway({ bootstrap: BOOT })));
  after(() => gw.close());

  it('takes only https://*.openai.azure.com or *.cognitiveservices.azure.com', async () => {
    for (const endpoint of ['http://acme.openai.azure.com', 'https://evil.example.com', 'https://acme.openai.azure.com.evil.io', 'https://169.254.169.254']) {
      const r = await store(gw, { provider: 'cloudx', api_key: 'k', endpoint });
      assert.equal(r.status, 400, endpoint);
    }
    assert.equal((await store(gw, { provider: 'cloudx', api_key: 'k' })).status, 400, 'an endpoint is required');
    assert.equal((await store(gw, { provider: 'cloudx', api_key: 'k', endpoint: 'https://acme.cognitiveservices.azure.com/' })).status, 200);
  });
});

describe('two replicas on one Redis', () => {
  let pair: ReplicaPairOverFake;
  before(async () => (pair = await startReplicaPairOverFakeOpenAI(BOOT)));
  after(() => pair.close());

  it('a key stored through one is used by the other on the next request, and a delete is obeyed likewise', async () => {
    const { a, b, fake } = pair;
    assert.equal((await chat(b, ACME)).status, 402);
    assert.equal((await store(a, { provider: 'openai', api_key: 'sk-replica-a-5678' })).status, 200);
    const before = fake.received.length;
    assert.equal((await chat(b, ACME)).status, 200);
    assert.equal(fake.received[before]?.headers['authorization'], 'Bearer sk-replica-a-5678');
    assert.equal((await call(a, '/api/v1/vendor_key/delete', { key: ACME, body: { provider: 'openai' } })).status, 200);
    assert.equal((await chat(b, ACME)).status, 402);
  });

  it('the record in Redis is sealed under a named key id, never plaintext', async () => {
    const { a } = pair;
    assert.equal((await store(a, { provider: 'msgvendor', api_key: 'sk-ant-sealed-check-1' })).status, 200);
    const r = testRedis();
    try {
      const all = await r.hgetall(redisKeys(a.redisPrefix ?? '').doc('vendor_keys'));
      const doc = JSON.parse(all['acme:msgvendor'] ?? '{}') as { sealed?: { kid: string } };
      assert.equal(doc.sealed?.kid, keyId(Buffer.from(SECRETS_KEY, 'base64')));
      assert.equal(JSON.stringify(all).includes('sk-ant-sealed-check'), false);
    } finally {
      r.disconnect();
    }
  });
});

describe('store_timeout: a stored-key lookup that must ask a store which does not answer', () => {
  let behind: Awaited<ReturnType<typeof startGatewayBehindProxy>>;
  before(async () => (behind = await startGatewayBehindProxy(BOOT, { GW_BYOK_STORE_TIMEOUT_S: '0.3' })));
  after(() => behind.close());

  it('is 504 store_timeout with Retry-After: 5 and x-gw-stage-durations naming the running byok_store stage', async () => {
    behind.proxy.hang();
    const started = Date.now();
    const reply = await chat(behind.gw, ACME);
    assert.equal(reply.status, 504);
    assert.equal(reply.headers.get('x-gw-error'), 'store_timeout');
    assert.equal(reply.headers.get('retry-after'), '5');
    assert.match(reply.headers.get('x-gw-stage-durations') ?? '', /byok_store;dur=[\d.]+;running/);
    assert.ok(Date.now() - started >= 290, 'waited for the bound');
    behind.proxy.resume();
  });
});

describe('key rotation with GW_DATA_DIR (embedded store persisted)', () => {
  const KEY1 = Buffer.alloc(32, 1).toString('base64');
  const KEY2 = Buffer.alloc(32, 2).toString('base64');
  let fake: FakeVendor;
  let dir: string;
  before(async () => {
    fake = await startFakeOpenAI();
    dir = scratchDir('gw-vk-');
  });
  after(() => fake.close());

  const boot = (env: Record<string, string>) => startTestGateway({ bootstrap: BOOT, env: { GW_DATA_DIR: dir, GW_UPSTREAM_OPENAI: fake.origin, ...env } });
  const stateText = async () => (await Promise.all((await readdir(dir)).map((f) => readFile(join(dir, f), 'utf8').catch(() => '')))).join('\n');

  it('survives a restart sealed; a new key with the old one as previous reseals it; then the old key can go', async () => {
    let gw = await boot({ GW_SECRETS_KEY: KEY1 });
    assert.equal((await store(gw, { provider: 'openai', api_key: 'sk-rotate-me-4321' })).status, 200);
    await gw.close();
    assert.equal((await stateText()).includes('sk-rotate-me'), false, 'nothing plaintext on disk');
    assert.ok((await stateText()).includes(keyId(Buffer.from(KEY1, 'base64'))));

    gw = await boot({ GW_SECRETS_KEY: KEY2, GW_SECRETS_KEY_PREVIOUS: KEY1 });
    let before = fake.received.length;
    assert.equal((await chat(gw, ACME)).status, 200);
    assert.equal(fake.received[before]?.headers['authorization'], 'Bearer sk-rotate-me-4321');
    await gw.close();
    const text = await stateText();
    assert.ok(text.includes(keyId(Buffer.from(KEY2, 'base64'))), 'resealed under the new key');
    assert.equal(text.includes(keyId(Buffer.from(KEY1, 'base64'))), false);

    gw = await boot({ GW_SECRETS_KEY: KEY2 });
    before = fake.received.length;
    assert.equal((await chat(gw, ACME)).status, 200);
    assert.equal(fake.received[before]?.headers['authorization'], 'Bearer sk-rotate-me-4321');
    const settings = await call(gw, '/api/v1/settings', { key: ACME });
    assert.deepEqual(settings.json['vendor_keys'], [{ provider: 'openai', credential_kind: 'api_key', key_hint: '4321' }]);
    await gw.close();
  });

  it('a record sealed under a key no longer configured is refused as 402 naming the cause, not relayed', async () => {
    const gw = await boot({ GW_SECRETS_KEY: Buffer.alloc(32, 3).toString('base64') });
    const reply = await chat(gw, ACME);
    assert.equal(reply.status, 402);
    assert.match(errorMessage(reply), /cannot be opened/);
    await gw.close();
  });
});

/**
 * docs/api.md, Rotation: GW_SECRETS_KEY is swapped in two phases so that during
 * a rolling restart every running replica can open every record, whichever
 * key sealed it.
 */
describe('two-phase key rotation: replicas on either side of a rolling restart share one Redis', () => {
  const OLD = SECRETS_KEY;
  const NEW = Buffer.alloc(32, 9).toString('base64');
  const kid = (k: string) => keyId(Buffer.from(k, 'base64'));
  const prefix = newRedisPrefix();
  const running = new Set<TestGateway>();
  let fake: FakeVendor;
  before(async () => (fake = await startFakeOpenAI()));
  after(async () => {
    await Promise.all([...running].map((gw) => gw.close()));
    await dropRedisPrefix(prefix);
    await fake.close();
  });

  const replica = async (env: Record<string, string>, bootstrap?: Bootstrap) => {
    const gw = await startTestGateway({ redisPrefix: prefix, bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin, ...env } });
    running.add(gw);
    return gw;
  };
  /** a rolling restart of one replica onto new settings */
  const restart = async (gw: TestGateway, env: Record<string, string>) => {
    running.delete(gw);
    await gw.close();
    return replica(env);
  };
  /** the key id each stored record is sealed under, read from Redis */
  const kids = async () => {
    const r = testRedis();
    try {
      const all = await r.hgetall(redisKeys(prefix).doc('vendor_keys'));
      return Object.fromEntries(Object.entries(all).map(([id, text]) => [id, (JSON.parse(text) as { sealed: { kid: string } }).sealed.kid]));
    } finally {
      r.disconnect();
    }
  };
  const relaysWith = async (gw: TestGateway, key: string, secret: string) => {
    const n = fake.received.length;
    const reply = await chat(gw, key);
    assert.equal(reply.status, 200, JSON.stringify(reply.json));
    assert.equal(fake.received[n]?.headers['authorization'], `Bearer ${secret}`);
  };
  const PHASE1 = { GW_SECRETS_KEY: OLD, GW_SECRETS_KEY_PREVIOUS: NEW };
  const PHASE2 = { GW_SECRETS_KEY: NEW, GW_SECRETS_KEY_PREVIOUS: OLD };
  const PHASE3 = { GW_SECRETS_KEY: NEW };

  it('phase 1 (new key readable), phase 2 (swap, reseal at start), phase 3 (drop the old key): every replica opens every record throughout', async () => {
    let a = await replica({ GW_SECRETS_KEY: OLD }, BOOT);
    let b = await replica({ GW_SECRETS_KEY: OLD });
    assert.equal((await store(a, { provider: 'openai', api_key: 'sk-before-rotation-1111' })).status, 200);

    // phase 1, rolling: the new key becomes readable everywhere; nothing is sealed under it yet
    a = await restart(a, PHASE1);
    b = await restart(b, PHASE1);
    assert.deepEqual(await kids(), { 'acme:openai': kid(OLD) }, 'phase 1 reseals nothing');
    await relaysWith(a, ACME, 'sk-before-rotation-1111');

    // phase 2, rolling: b swaps first and reseals under the new key at start, while a still runs phase 1
    b = await restart(b, PHASE2);
    assert.deepEqual(await kids(), { 'acme:openai': kid(NEW) }, 'resealed under the new key at start');
    await relaysWith(a, ACME, 'sk-before-rotation-1111');
    await relaysWith(b, ACME, 'sk-before-rotation-1111');
    assert.equal((await store(b, { provider: 'openai', api_key: 'sk-sealed-new-2222' }, OTHER)).status, 200);
    await relaysWith(a, OTHER, 'sk-sealed-new-2222');
    assert.equal((await store(a, { provider: 'openai', api_key: 'sk-sealed-old-3333' })).status, 200);
    assert.deepEqual(await kids(), { 'acme:openai': kid(OLD), 'other:openai': kid(NEW) }, 'a phase-1 replica still seals under the old key');
    await relaysWith(b, ACME, 'sk-sealed-old-3333');

    // phase 2 completes: a swaps too; its start reseals what it wrote under the old key
    a = await restart(a, PHASE2);
    assert.deepEqual(await kids(), { 'acme:openai': kid(NEW), 'other:openai': kid(NEW) });

    // phase 3, rolling: the old key goes
    b = await restart(b, PHASE3);
    await relaysWith(b, ACME, 'sk-sealed-old-3333');
    await relaysWith(a, OTHER, 'sk-sealed-new-2222');
    a = await restart(a, PHASE3);
    await relaysWith(a, ACME, 'sk-sealed-old-3333');
    await relaysWith(b, OTHER, 'sk-sealed-new-2222');
  });

  it('why phase 1 exists: a replica holding only the old key cannot open what a new-key replica resealed (402, not relayed)', async () => {
    const stale = await replica({ GW_SECRETS_KEY: OLD });
    const n = fake.received.length;
    const reply = await chat(stale, ACME);
    assert.equal(reply.status, 402);
    assert.match(errorMessage(reply), /cannot be opened/);
    assert.equal(fake.received.length, n);
  });
});
