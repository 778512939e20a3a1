import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { startFakeOpenAI } from '../fakes/openai.js';
import type { FakeVendor } from '../fakes/server.js';
import { oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';

describe('chat-completions relay through the openai SDK', () => {
  let fake: FakeVendor;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('acme');

  before(async () => {
    fake = await startFakeOpenAI();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin } });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  const client = (apiKey = devKey, headers: Record<string, string> = { 'x-gw-provider-key': 'sk-upstream-test' }) =>
    new OpenAI({ apiKey, baseURL: `${gw.url}/v1`, defaultHeaders: headers, maxRetries: 0 });

  it('relays a completion and the body reaches the vendor byte for byte', async () => {
    const before = fake.received.length;
    const reply = await client().chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(reply.choices[0]?.message.content, 'Hello from the fake.');
    const got = fake.received[before];
    assert.ok(got);
    assert.equal(got.headers['authorization'], 'Bearer sk-upstream-test');
    assert.deepEqual(JSON.parse(got.body.toString()), { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(Object.keys(got.headers).some((h) => h.startsWith('x-gw-')), false);
  });

  it('streams chunk by chunk and ends with the usage chunk', async () => {
    const stream = await client().chat.completions.create({ model: 'gpt-4o', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    let usage: unknown;
    for await (const c of stream) {
      text += c.choices[0]?.delta.content ?? '';
      if (c.usage) usage = c.usage;
    }
    assert.equal(text, 'Hello from the fake.');
    assert.deepEqual(usage, { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 });
  });
});
