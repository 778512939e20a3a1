import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GatewayError } from '../../src/errors.js';
import type { RelayPlan } from '../../src/pipeline/index.js';
import { parseAllowedRegions, residencyStage, upstreamRegion } from '../../src/tenancy/residency.js';
import { startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.js';
import { startFakeOpenAI } from '../fakes/openai.js';
import type { FakeVendor } from '../fakes/server.js';
import { devKeySecret, startTestGateway, type Bootstrap, type TestGateway } from '../helpers/gateway.js';

const key = (org: string) => devKeySecret(`policy-${org}`);
const bootstrapOf = (orgs: Array<{ org_id: string; parent_org_id?: string }>): Bootstrap => ({
  orgs,
  dev_keys: orgs.map((o) => ({ org_id: o.org_id, dev_key_id: `dk-${o.org_id}`, api_key: key(o.org_id) })),
});

describe('upstream region of a location (data residency)', () => {
  it('is the cloudy region, the Vertex location, or a regional cloudx endpoint', () => {
    assert.equal(upstreamRegion({ region: 'EU-Central-1' }), 'eu-central-1');
    assert.equal(upstreamRegion({ project: 'p', location: 'europe-west4' }), 'europe-west4');
    assert.equal(upstreamRegion({ endpoint: 'https://westeurope.api.cognitive.microsoft.com' }), 'westeurope');
    assert.equal(upstreamRegion({ endpoint: 'https://myresource.openai.azure.com' }), undefined, 'a resource name is not a region');
    assert.equal(upstreamRegion(undefined), undefined);
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
    const plan = (location: RelayPlan['location']) => ({ provider: 'cloudy', location }) as unknown as RelayPlan;
    assert.doesNotThrow(() => stage.admit({} as never, plan({ region: 'eu-west-3' })));
    assert.doesNotThrow(() => stage.admit({} as never, plan(undefined)), 'no region named: not subject to the rule');
    assert.throws(
      () => stage.admit({} as never, plan({ project: 'p', location: 'us-central1' })),
      (err: unknown) => err instanceof GatewayError && err.type === 'forbidden' && err.status === 451 && /us-central1/.test(err.message),
    );
    assert.throws(() => stage.located?.(plan(undefined), { region: 'us-west-2' }), { type: 'forbidden', status: 451 });
  });
});

describe('dedicated deployment (GW_DEDICATED_TENANT)', () => {
  let fake: FakeVendor;
  let gw: TestGateway;
  before(async () => {
    fake = await startFakeOpenAI();
    gw = await startTestGateway({
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

describe('data residency on the converse surface (GW_ALLOWED_REGIONS)', () => {
  let fake: FakeBedrock;
  let gw: TestGateway;
  before(async () => {
    fake = await startFakeBedrock();
    gw = await startTestGateway({
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
