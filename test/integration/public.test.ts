import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { CATALOG } from '../../src/providers/catalog.js';
import { SKILLS } from '../../src/skills/table.js';
import { PER_KEY_SKILLS } from '../../src/tenancy/skills.js';
import { oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';

describe('unauthenticated reads: /healthz and /v1/models', () => {
  let gw: TestGateway;

  before(async () => {
    gw = await startTestGateway({ env: { GW_GUARDRAILS_MODEL_MODE: 'enforce' } });
  });
  after(async () => {
    await gw.close();
  });

  it('GET /healthz answers without a key: liveness, the native uWS front, the lever set and the overload gauge', async () => {
    const res = await fetch(`${gw.url}/healthz`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /application\/json/);
    assert.ok(res.headers.get('x-gw-request-id'));
    const body = (await res.json()) as {
      status: string;
      uws_native: boolean;
      levers: { configured: { guardrails_classifier_mode: string; store: string } };
      overload: { inflight_requests: number; inflight_bytes: number; loop_stall_share: number; shedding: boolean };
    };
    assert.equal(body.status, 'ok');
    assert.equal(body.uws_native, true);
    assert.equal(body.levers.configured.guardrails_classifier_mode, 'enforce');
    assert.equal(body.levers.configured.store, 'embedded');
    assert.equal(body.overload.inflight_requests, 1, 'the health check itself is in flight');
    assert.equal(body.overload.inflight_bytes, 0);
    assert.equal(typeof body.overload.loop_stall_share, 'number');
    assert.equal(body.overload.shedding, false);
  });

  it('GET /livez and GET /readyz answer 200 on an idle replica', async () => {
    for (const path of ['/livez', '/readyz']) {
      const res = await fetch(`${gw.url}${path}`);
      assert.equal(res.status, 200, path);
      await res.body?.cancel();
    }
  });

  it('/healthz reports what runs: the guardrail stages and the per-key skills the skills table has a stage for; the policy stages are the pipeline\'s', async () => {
    const { levers } = (await (await fetch(`${gw.url}/healthz`)).json()) as {
      levers: { skills: Record<string, string>; guardrails: Record<string, string>; policy: string[] };
    };
    assert.deepEqual(levers.guardrails, { regex: 'running', classifier: 'running' });
    const tabled = new Set(SKILLS.map((r) => r.id));
    assert.deepEqual(levers.skills, Object.fromEntries(PER_KEY_SKILLS.map((s) => [s, tabled.has(s) ? 'running' : 'not_running'])));
    assert.deepEqual(levers.policy, ['queue_wait', 'model_access', 'rate_limit', 'spend_cap']);
  });

  it('a key is never required, and a bad one does not turn the read into a 401', async () => {
    for (const path of ['/healthz', '/v1/models']) {
      const res = await fetch(`${gw.url}${path}`, { headers: { 'x-gw-key': 'gw_not_a_real_key', authorization: 'Bearer nonsense' } });
      assert.equal(res.status, 200, path);
      await res.arrayBuffer();
    }
  });

  it('GET /v1/models is {object:"list", data:[{id, object:"model", owned_by, provider}]}', async () => {
    const res = await fetch(`${gw.url}/v1/models`);
    assert.equal(res.status, 200);
    const body = (await res.json()) as { object: string; data: Array<Record<string, unknown>> };
    assert.equal(body.object, 'list');
    assert.ok(body.data.length > 0);
    for (const m of body.data) {
      assert.deepEqual(Object.keys(m).sort(), ['id', 'object', 'owned_by', 'provider']);
      assert.equal(m['object'], 'model');
      const entry = CATALOG.find((c) => c.id === m['id']);
      assert.ok(entry, `${String(m['id'])} is not in the catalog`);
      assert.equal(m['provider'], entry.provider);
    }
    assert.ok(body.data.some((m) => m['id'] === 'gpt-4o' && m['provider'] === 'openai'));
  });

  it('the openai SDK lists the models', async () => {
    const client = new OpenAI({ apiKey: 'unused', baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    assert.ok(ids.includes('gpt-4o'));
  });

  it('writes to the public routes are 405 naming GET', async () => {
    const res = await fetch(`${gw.url}/healthz`, { method: 'POST', body: '{}' });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('x-gw-error'), 'method_not_allowed');
    assert.equal(res.headers.get('allow'), 'GET');
    await res.arrayBuffer();
  });
});

describe('/v1/models lists only providers with a reachable destination', () => {
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('models');

  before(async () => {
    // nothing listens on port 1: every openai call fails to connect
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_OPENAI: 'http://127.0.0.1:1' } });
  });
  after(async () => {
    await gw.close();
  });

  const listed = async () => ((await (await fetch(`${gw.url}/v1/models`)).json()) as { data: Array<{ id: string; provider: string }> }).data;

  it('drops a provider whose calls cannot connect, and keeps the others', async () => {
    assert.ok((await listed()).some((m) => m.provider === 'openai'), 'listed until a call fails');
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gw-key': devKey, 'x-gw-provider-key': 'sk-x' },
        body: '{"model":"gpt-4o","messages":[]}',
      });
      assert.equal(res.status, 502);
      await res.arrayBuffer();
    }
    const after = await listed();
    assert.equal(after.some((m) => m.provider === 'openai'), false);
    assert.ok(after.some((m) => m.provider === 'msgvendor'));
  });
});
