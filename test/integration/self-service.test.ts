import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFakeAnthropic } from '../fakes/anthropic.js';
import { startFakeOpenAI } from '../fakes/openai.js';
import type { FakeVendor } from '../fakes/server.js';
import { call, errorMessage, startReplicaPairOverFakeOpenAI, type ReplicaPairOverFake } from '../helpers/api.js';
import { CONFIG_SECRET, devKeySecret, startTestGateway, type Bootstrap, type TestGateway } from '../helpers/gateway.js';

const ACME = devKeySecret('ss-acme');
const OTHER = devKeySecret('ss-other');
const BOOT: Bootstrap = {
  orgs: [{ org_id: 'acme', plan: 'enterprise', rps_cap: 100 }, { org_id: 'other' }],
  dev_keys: [
    { org_id: 'acme', dev_key_id: 'dk-acme', api_key: ACME },
    { org_id: 'other', dev_key_id: 'dk-other', api_key: OTHER },
  ],
};
const PASS = { 'x-gw-provider-key': 'sk-pass-through' };
const chat = (gw: TestGateway, model: string, key = ACME) => call(gw, '/v1/chat/completions', { key, headers: PASS, body: { model, messages: [{ role: 'user', content: 'hi' }] } });
const NO_CAP = { cap_usd: null, period: null, consumed_usd: null, resets_at: null };

for (const redis of [false, true]) {
  describe(`self-service configuration (${redis ? 'redis' : 'embedded'} store)`, () => {
    let openai: FakeVendor;
    let anthropic: FakeVendor;
    let gw: TestGateway;
    before(async () => {
      [openai, anthropic] = await Promise.all([startFakeOpenAI(), startFakeAnthropic()]);
      gw = await startTestGateway({ redis, bootstrap: BOOT, env: { GW_UPSTREAM_OPENAI: openai.origin, GW_UPSTREAM_MSGVENDOR: anthropic.origin } });
    });
    after(async () => {
      await gw.close();
      await openai.close();
      await anthropic.close();
    });

    it('GET /api/v1/settings answers the caller’s own org in the documented settings shape', async () => {
      const r = await call(gw, '/api/v1/settings', { key: ACME });
      assert.equal(r.status, 200);
      const devKeys = r.json['dev_keys'] as Array<Record<string, unknown>>;
      assert.equal(devKeys.length, 1);
      assert.match(String(devKeys[0]?.['key_id']), /^key_[a-z2-7]{20}$/);
      assert.deepEqual({ ...r.json, dev_keys: devKeys.map(({ key_id: _k, ...rest }) => rest) }, {
        org_id: 'acme',
        parent_org_id: null,
        plan: 'enterprise',
        rps_cap: 100,
        spend_cap: NO_CAP,
        model_access: { models: null },
        vendor_keys: [],
        dev_keys: [{ dev_key_id: 'dk-acme', skills: {}, skill_modes: {}, locked_skills: {}, skill_params: {} }],
      });
    });

    it('settings dev_keys entries carry exactly the documented fields once skills are stored', async () => {
      const set = await call(gw, '/api/v1/dev_key/skills', { key: ACME, body: { skills: { pii_redaction: true }, skill_modes: { semantic_cache: 'shadow' } } });
      assert.equal(set.status, 200);
      const [entry] = (await call(gw, '/api/v1/settings', { key: ACME })).json['dev_keys'] as Array<Record<string, unknown>>;
      assert.deepEqual(Object.keys(entry ?? {}).sort(), ['dev_key_id', 'key_id', 'locked_skills', 'skill_modes', 'skill_params', 'skills']);
      assert.deepEqual(entry?.['skills'], { pii_redaction: true });
      assert.deepEqual(entry?.['skill_modes'], { semantic_cache: 'shadow' });
      await call(gw, '/api/v1/dev_key/skills', { key: ACME, body: { skills: { pii_redaction: false }, skill_modes: { semantic_cache: 'off' } } });
    });

    it('sets, reports and removes a spend cap', async () => {
      const set = await call(gw, '/api/v1/spend_cap/update', { key: ACME, body: { cap_usd: 12.5, period: 'day' } });
      assert.equal(set.status, 200);
      const cap = (set.json['spend_cap'] ?? {}) as Record<string, unknown>;
      assert.equal(set.json['status'], 'success');
      assert.deepEqual({ ...cap, resets_at: typeof cap['resets_at'] }, { cap_usd: 12.5, period: 'day', consumed_usd: 0, resets_at: 'string' });
      assert.ok(Date.parse(String(cap['resets_at'])) > Date.now());
      const kept = await call(gw, '/api/v1/spend_cap/update', { key: ACME, body: { cap_usd: 20 } });
      assert.equal((kept.json['spend_cap'] as Record<string, unknown>)['period'], 'day', 'an omitted period keeps the current one');
      assert.equal(((await call(gw, '/api/v1/settings', { key: ACME })).json['spend_cap'] as Record<string, unknown>)['cap_usd'], 20);
      const removed = await call(gw, '/api/v1/spend_cap/update', { key: ACME, body: { cap_usd: null } });
      assert.deepEqual(removed.json, { status: 'success', spend_cap: NO_CAP });
      assert.equal((await call(gw, '/api/v1/spend_cap/update', { key: ACME, body: { cap_usd: -1 } })).status, 400);
      assert.equal((await call(gw, '/api/v1/spend_cap/update', { key: ACME, body: { cap_usd: 1, period: 'year' } })).status, 400);
    });

    it('model access: a model not enabled is 403 model_not_in_scope on every surface naming one; variants follow their base model', async () => {
      const set = await call(gw, '/api/v1/model_access/update', { key: ACME, body: { models: ['gpt-4o-mini', 'gpt-4o-mini'] } });
      assert.deepEqual(set.json, { status: 'success', model_access: { models: ['gpt-4o-mini'] } });
      const refused = await chat(gw, 'gpt-4o');
      assert.equal(refused.status, 403);
      assert.equal(refused.headers.get('x-gw-error'), 'model_not_in_scope');
      assert.equal((refused.json['error'] as Record<string, unknown>)['type'], 'model_not_in_scope');
      assert.equal((await chat(gw, 'gpt-4o-mini')).status, 200);
      assert.equal((await chat(gw, 'gpt-4o-mini-2024-07-18')).status, 200);
      const before = anthropic.received.length;
      const msg = await call(gw, '/msgvendor/v1/messages', {
        headers: { 'x-api-key': ACME, 'x-gw-provider-key': 'sk-ant-pass', 'anthropic-version': '2023-06-01' },
        body: { model: 'claude-sonnet-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(msg.status, 403);
      assert.equal(msg.headers.get('x-gw-error'), 'model_not_in_scope');
      assert.equal(anthropic.received.length, before, 'nothing went upstream');
      assert.equal((await chat(gw, 'gpt-4o', OTHER)).status, 200, 'another org’s list is its own');
      assert.deepEqual((await call(gw, '/api/v1/settings', { key: ACME })).json['model_access'], { models: ['gpt-4o-mini'] });
      assert.equal((await call(gw, '/api/v1/model_access/update', { key: ACME, body: { models: null } })).status, 200);
      assert.equal((await chat(gw, 'gpt-4o')).status, 200, 'null enables every catalog model');
    });

    it('unknown model ids are 400 naming them', async () => {
      const r = await call(gw, '/api/v1/model_access/update', { key: ACME, body: { models: ['gpt-4o', 'gpt-9-ultra', 'nope'] } });
      assert.equal(r.status, 400);
      assert.match(errorMessage(r), /gpt-9-ultra, nope/);
    });

    it('a body or query naming another tenant is 403 forbidden, never overridden; its own tenant_id is fine', async () => {
      for (const [path, body] of [
        ['/api/v1/spend_cap/update', { cap_usd: 1, tenant_id: 'other' }],
        ['/api/v1/model_access/update', { models: null, tenant_id: 'other' }],
        ['/api/v1/vendor_key/delete', { provider: 'openai', tenant_id: 'other' }],
      ] as const) {
        const r = await call(gw, path, { key: ACME, body });
        assert.equal(r.status, 403, path);
        assert.equal(r.headers.get('x-gw-error'), 'forbidden');
      }
      assert.equal((await call(gw, '/api/v1/settings?tenant_id=other', { key: ACME })).status, 403);
      assert.deepEqual((await call(gw, '/api/v1/settings', { key: OTHER })).json['spend_cap'], NO_CAP, 'nothing reached the other org');
      assert.equal((await call(gw, '/api/v1/spend_cap/update', { key: ACME, body: { cap_usd: null, tenant_id: 'acme' } })).status, 200);
    });

    it('no developer key is 401; the deployment config secret is not an org identity here', async () => {
      const none = await call(gw, '/api/v1/settings');
      assert.equal(none.status, 401);
      assert.equal(none.headers.get('x-gw-error'), 'invalid_developer_key');
      assert.equal((await call(gw, '/api/v1/settings?tenant_id=acme', { key: CONFIG_SECRET })).status, 401);
      assert.equal((await call(gw, '/api/v1/settings', { key: devKeySecret('unknown') })).status, 401);
    });
  });
}

describe('self-service on two replicas sharing one Redis', () => {
  let pair: ReplicaPairOverFake;
  before(async () => (pair = await startReplicaPairOverFakeOpenAI(BOOT)));
  after(() => pair.close());

  it('an access list written through one replica is obeyed by the other on the next request', async () => {
    const { a, b } = pair;
    assert.equal((await chat(b, 'gpt-4o')).status, 200);
    assert.equal((await call(a, '/api/v1/model_access/update', { key: ACME, body: { models: ['gpt-4.1'] } })).status, 200);
    assert.equal((await chat(b, 'gpt-4o')).status, 403);
    assert.equal((await call(a, '/api/v1/model_access/update', { key: ACME, body: { models: null } })).status, 200);
    assert.equal((await chat(b, 'gpt-4o')).status, 200);
  });

  it('a cap set through one replica reads the same through the other', async () => {
    const { a, b } = pair;
    assert.equal((await call(a, '/api/v1/spend_cap/update', { key: ACME, body: { cap_usd: 3, period: 'month' } })).status, 200);
    const cap = (await call(b, '/api/v1/settings', { key: ACME })).json['spend_cap'] as Record<string, unknown>;
    assert.equal(cap['cap_usd'], 3);
    assert.equal(cap['period'], 'month');
  });
});
