import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startFakeAnthropic } from '../fakes/anthropic.js';
import { startFakeAzure } from '../fakes/azure.js';
import { startFakeBedrock } from '../fakes/bedrock.js';
import { startFakeGemini } from '../fakes/gemini.js';
import { startFakeOpenAI } from '../fakes/openai.js';
import type { FakeVendor } from '../fakes/server.js';
import { keysMatching, startTestGateway, testRedis, type TestGateway } from '../helpers/gateway.js';
import { scratchDir } from '../helpers/scratch.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const canary = (prefix: string) => `${prefix}${randomBytes(12).toString('hex')}LEAKCANARY`;
const devKey = () => `gw_${[...randomBytes(40)].map((b) => BASE62[b % 62]).join('')}`;

/** Every secret this run seeds; none may appear outside the fakes that are meant to receive them. */
const SECRETS = {
  devKey: devKey(),
  otherDevKey: devKey(),
  adminKey: canary('admin-'),
  configSecret: canary('config-'),
  stored: {
    openai: canary('sk-stored-'),
    msgvendor: canary('sk-ant-stored-'),
    genvendor: canary('AIza-stored-'),
    cloudx: canary('azure-stored-'),
    genvendor_vertex: canary('ya29.stored-'),
    cloudyPairSecret: canary('pairsecret'),
    cloudyApiKey: canary('bedrock-key-'),
  },
  passThrough: {
    openai: canary('sk-pass-'),
    msgvendor: canary('sk-ant-pass-'),
    genvendor: canary('AIza-pass-'),
    cloudx: canary('azure-pass-'),
    cloudy: canary('bedrock-pass-'),
    badBearer: canary('not-a-dev-key-'),
  },
};
const AKID = 'AKIALEAKCANARY00001';
const ALL: string[] = [
  SECRETS.devKey,
  SECRETS.otherDevKey,
  SECRETS.adminKey,
  SECRETS.configSecret,
  ...Object.values(SECRETS.stored),
  ...Object.values(SECRETS.passThrough),
];

interface Seen {
  what: string;
  text: string;
}

/** Drives every route this deployment serves, successes and failures, recording every answer whole. */
async function driveEverything(gw: TestGateway, seen: Seen[], oneTimeDisplay: Seen[]): Promise<void> {
  const send = async (path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown; key?: string } = {}) => {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...init.headers };
    if (init.key !== undefined) headers['authorization'] = `Bearer ${init.key}`;
    const res = await fetch(`${gw.url}${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers,
      body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
    });
    const text = `${res.status}\n${[...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n\n${await res.text()}`;
    return { status: res.status, record: { what: `${init.method ?? (init.body === undefined ? 'GET' : 'POST')} ${path}`, text } };
  };
  const drive = async (path: string, init: Parameters<typeof send>[1] = {}) => {
    const { status, record } = await send(path, init);
    seen.push(record);
    return status;
  };
  const key = SECRETS.devKey;
  const s = SECRETS.stored;
  const p = SECRETS.passThrough;

  // stored provider keys, every provider, then refusals that carry a secret in the body
  assert.equal(await drive('/api/v1/vendor_key/create', { key, body: { provider: 'openai', api_key: s.openai } }), 200);
  assert.equal(await drive('/api/v1/vendor_key/create', { key, body: { provider: 'msgvendor', api_key: s.msgvendor } }), 200);
  assert.equal(await drive('/api/v1/vendor_key/create', { key, body: { provider: 'genvendor', api_key: s.genvendor } }), 200);
  assert.equal(await drive('/api/v1/vendor_key/create', { key, body: { provider: 'cloudx', api_key: s.cloudx, endpoint: 'https://acme.openai.azure.com' } }), 200);
  assert.equal(await drive('/api/v1/vendor_key/create', { key, body: { provider: 'genvendor_vertex', api_key: s.genvendor_vertex, project: 'acme-project', location: 'us-central1' } }), 200);
  assert.equal(await drive('/api/v1/vendor_key/create', { key, body: { provider: 'cloudy', api_key: `${AKID}:${s.cloudyPairSecret}` } }), 200);
  assert.equal(await drive('/api/v1/vendor_key/create', { key: SECRETS.otherDevKey, body: { provider: 'cloudy', api_key: s.cloudyApiKey, credential_kind: 'api_key' } }), 200);
  assert.equal(await drive('/api/v1/vendor_key/create', { key, body: { provider: 'cloudy', api_key: `bad pair ${s.cloudyPairSecret}` } }), 400);
  assert.equal(await drive('/api/v1/vendor_key/create', { key, body: { provider: 'openai', api_key: s.openai, region: 'us-east-1' } }), 400);
  assert.equal(await drive('/api/v1/vendor_key/create', { key, body: { provider: 'openai', api_key: s.openai, tenant_id: 'other' } }), 403);
  assert.equal(await drive('/api/v1/vendor_key/create', { key, body: `{"provider":"openai","api_key":"${s.openai}"` }), 400);
  assert.equal(await drive('/api/v1/vendor_key/create', { key: p.badBearer, body: { provider: 'openai', api_key: s.openai } }), 401);
  assert.equal(await drive('/api/v1/vendor_key/delete', { key, body: { provider: 'genvendor_vertex' } }), 200);

  // configuration reads and writes
  assert.equal(await drive('/api/v1/settings', { key }), 200);
  assert.equal(await drive('/api/v1/settings', { key: SECRETS.otherDevKey }), 200);
  assert.equal(await drive('/api/v1/settings', { headers: { 'x-gw-key': p.badBearer } }), 401);
  assert.equal(await drive('/api/v1/spend_cap/update', { key, body: { cap_usd: 100 } }), 200);
  assert.equal(await drive('/api/v1/model_access/update', { key, body: { models: null } }), 200);
  assert.equal(await drive('/api/v1/model_access/update', { key, body: { models: ['gpt-9-unknown'] } }), 400);
  assert.equal(await drive('/api/v1/dev_key/skills', { key, body: { skills: { pii_redaction: true }, skill_modes: { pii_redaction: 'shadow' } } }), 200);
  assert.equal(await drive('/api/v1/dev_key/skills', { key: SECRETS.configSecret, body: { tenant_id: 'acme', dev_key_id: 'dk-acme', skills: { semantic_cache: true } } }), 200);
  assert.equal(await drive('/api/v1/tenant/acme/skills/pii_redaction/lifecycle', { key, body: { key_id: 'dk-acme', mode: 'canary:20' } }), 200);
  assert.equal(await drive('/api/v1/tenant/acme/skills/pii_redaction/lifecycle', { headers: { 'x-gw-config-secret': SECRETS.configSecret }, body: { key_id: 'dk-acme', mode: 'bogus' } }), 400);
  assert.equal(await drive('/api/v1/tenant/acme/skills/pii_redaction/lifecycle', { headers: { 'x-gw-config-secret': p.badBearer }, body: { key_id: 'dk-acme', mode: 'prod' } }), 401);
  assert.equal(await drive('/api/v1/tenant/other/skills/pii_redaction/lifecycle', { key, body: { key_id: 'dk-other', mode: 'prod' } }), 403);

  // admin routes: the one-time display of a new key is the only answer allowed to carry a secret
  assert.equal(await drive('/api/v1/admin/orgs', { key: SECRETS.adminKey, body: { org_id: 'third' } }), 201);
  assert.equal(await drive('/api/v1/admin/orgs', { key: p.badBearer, body: { org_id: 'fourth' } }), 403);
  const minted = await send('/api/v1/admin/dev_keys', { headers: { 'x-gw-admin-key': SECRETS.adminKey }, body: { org_id: 'third' } });
  assert.equal(minted.status, 201);
  oneTimeDisplay.push(minted.record);

  // relays: stored keys, pass-through keys, vendor errors, truncation, the parity relay
  const chat = (model: string, headers: Record<string, string> = {}) => drive('/v1/chat/completions', { key, headers, body: { model, messages: [{ role: 'user', content: 'hi' }] } });
  assert.equal(await chat('gpt-4o'), 200);
  assert.equal(await chat('gpt-4o', { 'x-gw-provider-key': p.openai }), 200);
  assert.equal(await chat('error_401', { 'x-gw-provider-key': p.openai }), 401);
  assert.equal(await chat('truncated', { 'x-gw-provider-key': p.openai }), 502);
  assert.equal(await drive('/v1/chat/completions', { headers: { authorization: `Bearer ${p.openai}` }, body: { model: 'gpt-4o', messages: [] } }), 401);
  const messages = { model: 'claude-sonnet-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] };
  assert.equal(await drive('/msgvendor/v1/messages', { headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' }, body: messages }), 200);
  assert.equal(await drive('/msgvendor/v1/messages', { headers: { 'x-gw-key': key, 'x-api-key': p.msgvendor, 'anthropic-version': '2023-06-01' }, body: messages }), 200);
  assert.equal(await drive('/msgvendor/v1/messages', { headers: { 'x-gw-key': key, 'x-api-key': p.msgvendor, 'anthropic-version': '2023-06-01' }, body: { ...messages, model: 'error_401' } }), 401);
  assert.equal(await drive('/v1/messages', { headers: { 'x-gw-key': key, 'x-api-key': p.msgvendor, 'anthropic-version': '2023-06-01' }, body: messages }), 200);
  const gen = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };
  assert.equal(await drive('/genvendor/v1beta/models/gemini-2.5-flash:generateContent', { headers: { 'x-goog-api-key': key }, body: gen }), 200);
  assert.equal(await drive('/genvendor/v1beta/models/gemini-2.5-flash:generateContent', { headers: { 'x-gw-key': key, 'x-goog-api-key': p.genvendor }, body: gen }), 200);
  assert.equal(await drive(`/genvendor/v1beta/models/gemini-2.5-flash:generateContent?key=${p.genvendor}`, { headers: { 'x-gw-key': key }, body: gen }), 200);
  const az = '/cloudx/compat/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21';
  assert.equal(await drive(az, { headers: { 'api-key': key }, body: { messages: [{ role: 'user', content: 'hi' }] } }), 200);
  assert.equal(await drive(az, { headers: { 'x-gw-key': key, 'api-key': p.cloudx }, body: { messages: [{ role: 'user', content: 'hi' }] } }), 200);
  const conv = `/cloudy/model/${encodeURIComponent('amazon.nova-lite-v1:0')}/converse`;
  const converse = { messages: [{ role: 'user', content: [{ text: 'hi' }] }] };
  assert.equal(await drive(conv, { key, body: converse }), 200);
  assert.equal(await drive(conv, { key: SECRETS.otherDevKey, body: converse }), 200);
  assert.equal(await drive(conv, { headers: { 'x-gw-key': key, authorization: `Bearer ${p.cloudy}` }, body: converse }), 200);
  assert.equal(await drive(conv, { headers: { 'x-gw-key': key, authorization: `Bearer ${p.cloudy}`, 'x-gw-provider-key': `${AKID}:${s.cloudyPairSecret}` }, body: converse }), 400);

  // unauthenticated reads, after all of the above
  for (const path of ['/healthz', '/v1/models', '/metrics', '/nope']) await drive(path);
}

async function redisDump(prefix: string): Promise<string> {
  const r = testRedis();
  const parts: string[] = [];
  try {
    for (const k of await keysMatching(r, `${prefix}*`)) {
      const type = await r.type(k);
      const value =
        type === 'hash' ? await r.hgetall(k)
        : type === 'string' ? await r.get(k)
        : type === 'list' ? await r.lrange(k, 0, -1)
        : type === 'set' ? await r.smembers(k)
        : type === 'zset' ? await r.zrange(k, '0', '-1', 'WITHSCORES')
        : type === 'stream' ? await r.xrange(k, '-', '+')
        : null;
      const dumped = await r.dumpBuffer(k);
      parts.push(`${k} ${type} ${JSON.stringify(value)} ${dumped?.toString('latin1') ?? ''}`);
    }
  } finally {
    r.disconnect();
  }
  assert.ok(parts.length > 0, 'the dump found the deployment’s keys');
  return parts.join('\n');
}

function assertNoSecret(where: string, text: string): void {
  for (const secret of ALL) {
    assert.equal(text.includes(secret), false, `${where} contains a seeded secret (${secret.slice(0, 12)}…)`);
    const marker = secret.slice(-34);
    assert.equal(text.includes(marker), false, `${where} contains the distinctive part of a seeded secret`);
  }
}

for (const mode of ['redis', 'embedded'] as const) {
  describe(`secrets never leak (${mode} store)`, () => {
    let fakes: FakeVendor[];
    let gw: TestGateway;
    let dataDir: string | undefined;
    const seen: Seen[] = [];
    const oneTimeDisplay: Seen[] = [];

    before(async () => {
      const [openai, anthropic, gemini, azure, bedrock] = await Promise.all([
        startFakeOpenAI(),
        startFakeAnthropic(),
        startFakeGemini(),
        startFakeAzure(),
        startFakeBedrock({ [AKID]: SECRETS.stored.cloudyPairSecret }),
      ]);
      fakes = [openai, anthropic, gemini, azure, bedrock];
      dataDir = mode === 'embedded' ? scratchDir('gw-leak-') : undefined;
      gw = await startTestGateway({
        redis: mode === 'redis',
        bootstrap: {
          orgs: [{ org_id: 'acme', rps_cap: 10_000 }, { org_id: 'other', rps_cap: 10_000 }],
          dev_keys: [
            { org_id: 'acme', dev_key_id: 'dk-acme', api_key: SECRETS.devKey },
            { org_id: 'other', dev_key_id: 'dk-other', api_key: SECRETS.otherDevKey },
          ],
        },
        env: {
          GW_LOG_LEVEL: 'debug',
          GW_ADMIN_KEY: SECRETS.adminKey,
          GW_CONFIG_SECRET: SECRETS.configSecret,
          GW_UPSTREAM_OPENAI: openai.origin,
          GW_UPSTREAM_MSGVENDOR: anthropic.origin,
          GW_UPSTREAM_GENVENDOR: gemini.origin,
          GW_UPSTREAM_CLOUDX: azure.origin,
          GW_UPSTREAM_CLOUDY: bedrock.origin,
          ...(dataDir ? { GW_DATA_DIR: dataDir, GW_SECRETS_KEY: Buffer.alloc(32, 9).toString('base64') } : {}),
        },
      });
      await driveEverything(gw, seen, oneTimeDisplay);
    });
    after(async () => {
      await gw.close();
      await Promise.all(fakes.map((f) => f.close()));
    });

    it('no response carries a seeded secret (the admin route’s one-time display of a new key aside)', () => {
      assert.ok(seen.length > 40, `drove ${seen.length} requests`);
      for (const s of seen) assertNoSecret(`response to ${s.what}`, s.text);
      assert.equal(oneTimeDisplay.length, 1);
    });

    it('no log line carries a seeded secret', () => {
      assert.ok(gw.logs.length > seen.length, 'every request was logged');
      assertNoSecret('the logs', gw.logs.join('\n'));
    });

    it('the state at rest carries none: the Redis namespace dumped key by key, or the data directory', async () => {
      if (mode === 'redis') assertNoSecret('the Redis dump', await redisDump(gw.redisPrefix as string));
      else {
        const dir = dataDir as string;
        const files = await readdir(dir);
        assert.ok(files.length > 0);
        const text = (await Promise.all(files.map((f) => readFile(join(dir, f)).then((b) => b.toString('latin1'))))).join('\n');
        assertNoSecret('the data directory', text);
        assert.ok(text.includes('"sealed"'), 'stored keys are there, sealed');
      }
    });
  });
}
