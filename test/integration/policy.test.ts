import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GatewayError } from '../../src/errors.js';
import type { Call } from '../../src/pipeline/types.js';
import { residencyStage } from '../../src/policy/residency.js';
import { namedRegion, parseAllowedRegions, upstreamRegion } from '../../src/tenancy/residency.js';
import { startFakeAnthropic } from '../fakes/anthropic.js';
import { startFakeAzure } from '../fakes/azure.js';
import { startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.js';
import { startFakeOpenAI } from '../fakes/openai.js';
import type { FakeVendor } from '../fakes/server.js';
import { call, type Answer } from '../helpers/api.js';
import { ADMIN_KEY, CONFIG_SECRET, devKeySecret, startTestGateway, type Bootstrap, type TestGateway } from '../helpers/gateway.js';

const key = (org: string) => devKeySecret(`policy-${org}`);
const bootstrapOf = (orgs: Array<{ org_id: string; parent_org_id?: string }>): Bootstrap => ({
  orgs,
  dev_keys: orgs.map((o) => ({ org_id: o.org_id, dev_key_id: `dk-${o.org_id}`, api_key: key(o.org_id) })),
});

describe('upstream region of a location (data residency)', () => {
  it('is the cloudy region, the Vertex location, or a regional cloudx endpoint; an upstream that names none counts as global', () => {
    assert.equal(upstreamRegion({ region: 'EU-Central-1' }), 'eu-central-1');
    assert.equal(upstreamRegion({ project: 'p', location: 'europe-west4' }), 'europe-west4');
    assert.equal(upstreamRegion({ endpoint: 'https://westeurope.api.cognitive.microsoft.com' }), 'westeurope');
    assert.equal(upstreamRegion({ endpoint: 'https://myresource.openai.azure.com' }), 'global', 'a resource name is not a region');
    assert.equal(upstreamRegion({}), 'global');
    assert.equal(upstreamRegion(undefined), 'global');
    assert.equal(namedRegion({ endpoint: 'https://myresource.openai.azure.com' }), undefined);
  });

  it('matches GW_ALLOWED_REGIONS exactly or by a trailing-* prefix, case-insensitively', () => {
    const allowed = parseAllowedRegions(' eu-* , europe-west4,Global ');
    assert.equal(allowed('eu-west-1'), true);
    assert.equal(allowed('europe-west4'), true);
    assert.equal(allowed('global'), true);
    assert.equal(allowed('europe-west1'), false);
    assert.equal(allowed('us-east-1'), false);
  });

  it('refuses a plan whose upstream region is outside the list: 451 forbidden', () => {
    const stage = residencyStage('eu-*');
    const plan = (location: Call['location']) => ({ provider: 'cloudy', location }) as unknown as Call;
    assert.doesNotThrow(() => stage.admit(plan({ region: 'eu-west-3' })));
    assert.doesNotThrow(() => stage.admit(plan(undefined)), 'a caller naming no region defers to the resolved location');
    assert.throws(
      () => stage.admit(plan({ project: 'p', location: 'us-central1' })),
      (err: unknown) => err instanceof GatewayError && err.type === 'forbidden' && err.status === 451 && /us-central1/.test(err.message),
    );
    assert.throws(() => stage.located?.(plan(undefined), { region: 'us-west-2' }), { type: 'forbidden', status: 451 });
  });

  it('an upstream naming no region is refused as global unless global is allowed', () => {
    const plan = { provider: 'openai' } as unknown as Call;
    assert.throws(() => residencyStage('eu-*').located?.(plan, {}), (err: unknown) => err instanceof GatewayError && err.status === 451 && /region global/.test(err.message));
    assert.throws(() => residencyStage('eu-*').located?.(plan, { endpoint: 'https://myresource.openai.azure.com' }), { type: 'forbidden', status: 451 });
    assert.doesNotThrow(() => residencyStage('eu-*,global').located?.(plan, {}));
    assert.doesNotThrow(() => residencyStage('eu-*,global').located?.(plan, { endpoint: 'https://myresource.openai.azure.com' }));
  });
});

for (const redis of [false, true]) {
  const store = redis ? 'redis' : 'embedded';

  describe(`dedicated deployment (GW_DEDICATED_TENANT) on the relays (${store} store)`, () => {
    let fake: FakeVendor;
    let gw: TestGateway;
    before(async () => {
      fake = await startFakeOpenAI();
      gw = await startTestGateway({
        redis,
        bootstrap: bootstrapOf([{ org_id: 'acme' }, { org_id: 'acme-team', parent_org_id: 'acme' }, { org_id: 'other' }]),
        env: { GW_UPSTREAM_OPENAI: fake.origin, GW_DEDICATED_TENANT: 'acme' },
      });
    });
    after(async () => {
      await gw.close();
      await fake.close();
    });
    const chat = (org: string) =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key(org)}`, 'x-gw-provider-key': 'sk-upstream', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
      });

    it('serves its tenant and the tenant\'s sub-tenants', async () => {
      assert.equal((await chat('acme')).status, 200);
      assert.equal((await chat('acme-team')).status, 200);
    });

    it('refuses another tenant with 403 and x-gw-error: forbidden, sending nothing upstream', async () => {
      const before = fake.received.length;
      const res = await chat('other');
      assert.equal(res.status, 403);
      assert.equal(res.headers.get('x-gw-error'), 'forbidden');
      const body = (await res.json()) as { error: { type: string; code: number } };
      assert.equal(body.error.type, 'forbidden');
      assert.equal(body.error.code, 403);
      assert.equal(fake.received.length, before);
    });
  });

  describe(`data residency on the converse surface (GW_ALLOWED_REGIONS) (${store} store)`, () => {
    let fake: FakeBedrock;
    let gw: TestGateway;
    before(async () => {
      fake = await startFakeBedrock();
      gw = await startTestGateway({
        redis,
        bootstrap: bootstrapOf([{ org_id: 'eu-bank' }]),
        env: { GW_UPSTREAM_CLOUDY: fake.origin, GW_ALLOWED_REGIONS: 'eu-*' },
      });
    });
    after(async () => {
      await gw.close();
      await fake.close();
    });
    const converse = (headers: Record<string, string>) =>
      fetch(`${gw.url}/cloudy/model/${encodeURIComponent('anthropic.claude-3-5-haiku-20241022-v1:0')}/converse`, {
        method: 'POST',
        headers: { 'x-gw-key': key('eu-bank'), 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'hi' }] }] }),
      });

    it('relays to an allowed region', async () => {
      const res = await converse({ authorization: 'Bearer bedrock-api-key', 'x-gw-aws-region': 'eu-central-1' });
      assert.equal(res.status, 200, await res.text());
    });

    it('refuses a region outside the list with 451 and x-gw-error: forbidden, sending nothing upstream', async () => {
      const before = fake.received.length;
      const res = await converse({ authorization: 'Bearer bedrock-api-key', 'x-gw-aws-region': 'us-east-1' });
      assert.equal(res.status, 451);
      assert.equal(res.headers.get('x-gw-error'), 'forbidden');
      assert.equal(fake.received.length, before);
    });

    it('checks the provider\'s default region when the call names none (us-east-1 for cloudy)', async () => {
      const before = fake.received.length;
      const res = await converse({ authorization: 'Bearer bedrock-api-key' });
      const text = await res.text();
      assert.equal(res.status, 451, text);
      assert.match(text, /us-east-1/);
      assert.equal(fake.received.length, before);
    });

    it('checks a stored key\'s region too, once it is resolved', async () => {
      const stored = await fetch(`${gw.url}/api/v1/vendor_key/create`, {
        method: 'POST',
        headers: { 'x-gw-key': key('eu-bank'), 'content-type': 'application/json' },
        body: JSON.stringify({ provider: 'cloudy', api_key: 'bedrock-stored-key', credential_kind: 'api_key', region: 'us-west-2' }),
      });
      assert.equal(stored.status, 200, await stored.text());
      const before = fake.received.length;
      const res = await converse({});
      assert.equal(res.status, 451, await res.text());
      assert.equal(res.headers.get('x-gw-error'), 'forbidden');
      assert.equal(fake.received.length, before);
    });
  });

  describe(`dedicated deployment (GW_DEDICATED_TENANT) on every authenticated route (${store} store)`, () => {
    let gw: TestGateway;
    const orgs = [{ org_id: 'acme' }, { org_id: 'acme-team', parent_org_id: 'acme' }, { org_id: 'other' }];
    before(async () => (gw = await startTestGateway({ redis, bootstrap: bootstrapOf(orgs), env: { GW_DEDICATED_TENANT: 'acme' } })));
    after(() => gw.close());
    const routes = (org: string): Array<[string, Record<string, unknown> | undefined]> => [
      ['/api/v1/settings', undefined],
      ['/api/v1/vendor_key/create', { provider: 'openai', api_key: 'sk-stored-upstream' }],
      ['/api/v1/vendor_key/delete', { provider: 'openai' }],
      ['/api/v1/spend_cap/update', { cap_usd: 5 }],
      ['/api/v1/model_access/update', { models: null }],
      ['/api/v1/dev_key/skills', { skills: { pii_redaction: true } }],
      [`/api/v1/tenant/${org}/skills/semantic_cache/lifecycle`, { key_id: `dk-${org}`, mode: 'shadow' }],
    ];
    const forbidden = (r: Answer, what: string) => {
      assert.equal(r.status, 403, `${what}: ${JSON.stringify(r.json)}`);
      assert.equal(r.headers.get('x-gw-error'), 'forbidden', what);
    };

    it('another tenant’s key is 403 forbidden on every configuration and skill route, before its body is read', async () => {
      for (const [path, body] of routes('other')) forbidden(await call(gw, path, { key: key('other'), body }), path);
      forbidden(await call(gw, '/api/v1/spend_cap/update', { key: key('other'), body: 'not an object' }), 'refused before its body is read');
      const admin = { 'x-gw-admin-key': ADMIN_KEY };
      const orgView = await call(gw, '/api/v1/admin/orgs', { headers: admin, body: { org_id: 'other' } });
      assert.equal(orgView.status, 200, 'admin routes stay the deployment admin’s');
    });

    it('the deployment’s config secret or admin key naming another tenant is 403 forbidden too', async () => {
      const lifecycle = '/api/v1/tenant/other/skills/semantic_cache/lifecycle';
      forbidden(await call(gw, lifecycle, { key: CONFIG_SECRET, body: { key_id: 'dk-other', mode: 'shadow' } }), 'config secret');
      forbidden(await call(gw, lifecycle, { headers: { 'x-gw-admin-key': ADMIN_KEY }, body: { key_id: 'dk-other', mode: 'shadow' } }), 'admin key');
      const own = await call(gw, '/api/v1/tenant/acme-team/skills/semantic_cache/lifecycle', { key: CONFIG_SECRET, body: { key_id: 'dk-acme-team', mode: 'shadow' } });
      assert.equal(own.status, 200, JSON.stringify(own.json));
    });

    it('the dedicated tenant and its sub-tenants are served on every route', async () => {
      for (const org of ['acme', 'acme-team']) {
        for (const [path, body] of routes(org)) {
          const r = await call(gw, path, { key: key(org), body });
          assert.equal(r.status, 200, `${org} ${path}: ${JSON.stringify(r.json)}`);
        }
      }
    });
  });

  describe(`data residency on upstreams that name no region (${store} store)`, () => {
    let openai: FakeVendor;
    let anthropic: FakeVendor;
    let azure: FakeVendor;
    let euOnly: TestGateway;
    let euAndGlobal: TestGateway;
    before(async () => {
      [openai, anthropic, azure] = await Promise.all([startFakeOpenAI(), startFakeAnthropic(), startFakeAzure()]);
      const env = { GW_UPSTREAM_OPENAI: openai.origin, GW_UPSTREAM_MSGVENDOR: anthropic.origin, GW_UPSTREAM_CLOUDX: azure.origin };
      const bootstrap = bootstrapOf([{ org_id: 'eu-bank' }]);
      euOnly = await startTestGateway({ redis, bootstrap, env: { ...env, GW_ALLOWED_REGIONS: 'eu-*' } });
      euAndGlobal = await startTestGateway({ redis, bootstrap, env: { ...env, GW_ALLOWED_REGIONS: 'eu-*,global' } });
    });
    after(async () => {
      await Promise.all([euOnly.close(), euAndGlobal.close()]);
      await Promise.all([openai.close(), anthropic.close(), azure.close()]);
    });
    const calls: Array<{ name: string; vendor: () => FakeVendor; send: (gw: TestGateway) => Promise<Answer> }> = [
      {
        name: 'openai chat-completions',
        vendor: () => openai,
        send: (gw) => call(gw, '/v1/chat/completions', { key: key('eu-bank'), headers: { 'x-gw-provider-key': 'sk-upstream' }, body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] } }),
      },
      {
        name: 'msgvendor messages',
        vendor: () => anthropic,
        send: (gw) =>
          call(gw, '/msgvendor/v1/messages', {
            headers: { 'x-api-key': key('eu-bank'), 'x-gw-provider-key': 'sk-ant-upstream', 'anthropic-version': '2023-06-01' },
            body: { model: 'claude-sonnet-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
          }),
      },
      {
        name: 'cloudx resource endpoint',
        vendor: () => azure,
        send: (gw) =>
          call(gw, '/cloudx/compat/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21', {
            headers: { 'api-key': key('eu-bank'), 'x-gw-provider-key': 'azure-resource-key', 'x-gw-azure-endpoint': 'https://myresource.openai.azure.com' },
            body: { messages: [{ role: 'user', content: 'hi' }] },
          }),
      },
    ];

    for (const c of calls) {
      it(`${c.name}: refused as region global with 451 forbidden under eu-*, sending nothing; served once global is listed`, async () => {
        const before = c.vendor().received.length;
        const refused = await c.send(euOnly);
        assert.equal(refused.status, 451, JSON.stringify(refused.json));
        assert.equal(refused.headers.get('x-gw-error'), 'forbidden');
        assert.match(JSON.stringify(refused.json), /region global/);
        assert.equal(c.vendor().received.length, before, 'nothing went upstream');
        const served = await c.send(euAndGlobal);
        assert.equal(served.status, 200, JSON.stringify(served.json));
      });
    }
  });
}
