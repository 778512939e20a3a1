import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { startFakeAnthropic, TEXT } from '../fakes/anthropic.js';
import type { FakeVendor, Recorded } from '../fakes/server.js';
import { oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/** Header names as they arrived on the wire at the vendor. */
const headerNames = (rec: Recorded): string[] => rec.rawHeaders.filter((_, i) => i % 2 === 0).map((h) => h.toLowerCase());

describe('parity relay POST /v1/messages', () => {
  let fake: FakeVendor;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('parity');

  before(async () => {
    fake = await startFakeAnthropic();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_MSGVENDOR: fake.origin } });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  const post = (body: string | Buffer, headers: Record<string, string>) =>
    fetch(`${gw.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers }, body });

  it('forwards the exact received bytes, whitespace, key order, escapes and all', async () => {
    const raw = Buffer.from('{\n\t"messages" : [ {"role":"user","content":"caf\\u00e9 \u00e9t\u00e9 \\ud83d\\ude00"} ],\r\n "model":"claude-haiku-4-5",  "max_tokens" : 1.0e1 }  \n');
    const n = fake.received.length;
    const res = await post(raw, { 'x-gw-key': devKey, 'x-api-key': 'sk-ant-presented' });
    assert.equal(res.status, 200);
    assert.ok(fake.received[n]!.body.equals(raw));
  });

  it('a vendor key presented on x-api-key goes upstream on x-api-key, the developer key never', async () => {
    const n = fake.received.length;
    await post('{"model":"claude-haiku-4-5","max_tokens":8,"messages":[]}', { 'x-gw-key': devKey, 'x-api-key': 'sk-ant-presented' });
    const got = fake.received[n]!;
    assert.equal(got.headers['x-api-key'], 'sk-ant-presented');
    assert.equal(got.headers['authorization'], undefined);
    assert.ok(!headerNames(got).some((h) => h.startsWith('x-gw-')));
    assert.ok(!got.rawHeaders.some((v) => v.includes(devKey)));
  });

  it('a vendor credential presented as Authorization: Bearer stays on Authorization', async () => {
    const n = fake.received.length;
    await post('{"model":"claude-haiku-4-5","max_tokens":8,"messages":[]}', { 'x-api-key': devKey, authorization: 'Bearer sk-ant-oat01-presented' });
    const got = fake.received[n]!;
    assert.equal(got.headers['authorization'], 'Bearer sk-ant-oat01-presented');
    assert.equal(got.headers['x-api-key'], undefined, 'the developer key on x-api-key is not forwarded');
  });

  it('the presented Authorization value goes upstream byte for byte, spacing and case included', async () => {
    const n = fake.received.length;
    await post('{"model":"claude-haiku-4-5","max_tokens":8,"messages":[]}', { 'x-gw-key': devKey, authorization: 'bearer   sk-ant-oat01-odd-spacing' });
    const got = fake.received[n]!;
    const i = got.rawHeaders.findIndex((h, j) => j % 2 === 0 && h.toLowerCase() === 'authorization');
    assert.equal(got.rawHeaders[i + 1], 'bearer   sk-ant-oat01-odd-spacing');
  });

  it('the official SDK works against the gateway root (its default /v1/messages path)', async () => {
    const client = new Anthropic({ apiKey: devKey, baseURL: gw.url, defaultHeaders: { 'x-gw-provider-key': 'sk-ant-stored-elsewhere' }, maxRetries: 0 });
    const n = fake.received.length;
    const reply = await client.messages.create({ model: 'claude-haiku-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(reply.content[0]?.type === 'text' && reply.content[0].text, TEXT);
    assert.equal(fake.received[n]!.headers['x-api-key'], 'sk-ant-stored-elsewhere');
    const stream = await client.messages.create({ model: 'claude-haiku-4-5', max_tokens: 8, stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const types: string[] = [];
    for await (const ev of stream) types.push(ev.type);
    assert.equal(types.at(-1), 'message_stop');
  });

  it('vendor errors come back untouched; gateway errors carry x-gw-error', async () => {
    const vendor = await post('{"model":"error_401","max_tokens":8,"messages":[]}', { 'x-gw-key': devKey, 'x-api-key': 'sk-ant-bad' });
    assert.equal(vendor.status, 401);
    assert.equal(vendor.headers.get('x-gw-error'), null);
    assert.deepEqual(await vendor.json(), { type: 'error', error: { type: 'authentication_error', message: 'scripted 401' }, request_id: 'req_fake_error' });

    const noKey = await post('{"model":"claude-haiku-4-5","max_tokens":8,"messages":[]}', { 'x-api-key': 'sk-ant-only' });
    assert.equal(noKey.status, 401);
    assert.equal(noKey.headers.get('x-gw-error'), 'invalid_developer_key');

    const noVendor = await post('{"model":"claude-haiku-4-5","max_tokens":8,"messages":[]}', { 'x-api-key': devKey });
    assert.equal(noVendor.status, 402);
    assert.equal(noVendor.headers.get('x-gw-error'), 'onboarding_incomplete');
    assert.equal(((await noVendor.json()) as { type: string }).type, 'error');

    const truncated = await post('{"model":"truncated","max_tokens":8,"messages":[]}', { 'x-gw-key': devKey, 'x-api-key': 'sk-ant-presented' });
    assert.equal(truncated.status, 502);
    assert.equal(truncated.headers.get('x-gw-error'), 'upstream_truncated');
  });

  it('a body that is not JSON is still relayed as received and the vendor answers', async () => {
    const n = fake.received.length;
    const res = await post('not json', { 'x-gw-key': devKey, 'x-api-key': 'sk-ant-presented' });
    assert.equal(fake.received.length, n + 1);
    assert.equal(fake.received[n]!.body.toString(), 'not json');
    assert.equal(res.headers.get('x-gw-error'), null);
  });
});
