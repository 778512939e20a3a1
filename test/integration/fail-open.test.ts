import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startFakeGemini } from '../fakes/gemini.js';
import { startFakeOpenAI } from '../fakes/openai.js';
import type { FakeVendor } from '../fakes/server.js';
import { SECRETS_KEY, oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { scratchDir } from '../helpers/scratch.js';

/**
 * Fail-open: a fault in the gateway's own machinery never turns a call
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
    const dir = scratchDir('gw-failopen-');
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

/**
 * A fault in the dispatch machinery is a fault the direct relay would run
 * into too: the caller gets one clean 502, never a second run of the code
 * that failed and never a 500. The fault is real: a stored Vertex key whose
 * persisted location is corrupt (a number), which the residency check of the
 * resolved location cannot read.
 */
describe('fail-open: a fault in dispatch is a clean 502, not a second run', () => {
  let fake: FakeVendor;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('acme-dispatch');
  const env = (dir: string) => ({ GW_UPSTREAM_GENVENDOR_VERTEX: fake.origin, GW_DATA_DIR: dir, GW_SECRETS_KEY: SECRETS_KEY, GW_ALLOWED_REGIONS: 'us-*,global' });

  before(async () => {
    fake = await startFakeGemini();
    const dir = scratchDir('gw-failopen-dispatch-');
    const first = await startTestGateway({ bootstrap, env: env(dir) });
    const stored = await fetch(`${first.url}/api/v1/vendor_key/create`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${devKey}` },
      body: JSON.stringify({ provider: 'genvendor_vertex', api_key: 'ya29.stored', project: 'stored-project', location: 'us-central1' }),
    });
    assert.equal(stored.status, 200, await stored.text());
    await first.close();
    const file = join(dir, 'state.json');
    const state = JSON.parse(await readFile(file, 'utf8')) as { vendor_keys: Record<string, { location: Record<string, unknown> }> };
    const doc = state.vendor_keys['acme-dispatch:genvendor_vertex'];
    assert.ok(doc, 'the stored key is persisted');
    doc.location['location'] = 5;
    await writeFile(file, JSON.stringify(state));
    gw = await startTestGateway({ bootstrap, env: env(dir) });
  });
  after(async () => {
    await gw?.close();
    await fake.close();
  });

  it('answers 502 upstream_unavailable in the surface envelope; nothing reached the vendor; not counted as a bypass', async () => {
    const before = fake.received.length;
    const res = await fetch(`${gw.url}/genvendor/v1beta/models/gemini-2.5-flash:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': devKey, 'x-gw-provider': 'genvendor_vertex' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
    });
    const body = (await res.json()) as { error?: { type?: string } };
    assert.equal(res.status, 502);
    assert.equal(body.error?.type, 'upstream_unavailable');
    assert.equal(res.headers.get('x-gw-served-by'), null);
    assert.equal(fake.received.length, before);
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.doesNotMatch(metrics, /gw_passthrough_total\{stage="dispatch"\} [1-9]/);
    assert.equal(gw.logs.filter((l) => l.includes('could not be relayed')).length, 1);
  });
});
