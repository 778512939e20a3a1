import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startFakeOpenAI } from '../fakes/openai.js';
import type { FakeVendor } from '../fakes/server.js';
import { SECRETS_KEY, oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * SPEC Fail-open: a fault in the gateway's own machinery never turns a call
 * into an error; the call goes straight to the provider. The fault here is
 * real: a corrupt model-access document in the persisted state, which makes
 * the model-access policy stage throw.
 */
describe('fail-open: an internal fault relays the call directly to the provider', () => {
  let fake: FakeVendor;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('acme');

  before(async () => {
    fake = await startFakeOpenAI();
    const dir = await mkdtemp(join(tmpdir(), 'gw-failopen-'));
    const corrupt = { org_policy: { 'model_access:acme': { org_id: 'acme', models: 5, updated_at: '2026-01-01T00:00:00Z' } } };
    await writeFile(join(dir, 'state.json'), JSON.stringify(corrupt));
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin, GW_DATA_DIR: dir, GW_SECRETS_KEY: SECRETS_KEY } });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  it('answers 200 with the untouched upstream body, marked direct_passthrough, without x-gw-error', async () => {
    const body = JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    const before = fake.received.length;
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gw-key': devKey, 'x-gw-provider-key': 'sk-upstream' },
      body,
    });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    assert.equal(res.headers.get('x-gw-served-by'), 'direct_passthrough');
    assert.equal(res.headers.get('x-gw-warnings'), '_passthrough');
    assert.equal(res.headers.get('x-gw-error'), null);
    assert.equal(JSON.parse(text).choices[0].message.content, 'Hello from the fake.');
    assert.equal(fake.received[before]?.body.toString(), body);
  });

  it('counts the bypass by stage and logs the reason', async () => {
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.match(metrics, /gw_passthrough_total\{stage="admission"\} [1-9]/);
    assert.ok(gw.logs.some((l) => l.includes('relaying directly to the provider')));
  });

  it('still refuses at the edge: an unknown developer key is 401, not relayed', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gw-key': 'gw_unknown', 'x-gw-provider-key': 'sk-upstream' },
      body: '{"model":"gpt-4o","messages":[]}',
    });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('x-gw-error'), 'invalid_developer_key');
  });
});
