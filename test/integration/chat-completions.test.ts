import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { completion, startFakeOpenAI } from '../fakes/openai.js';
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
    assert.deepEqual(usage, { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16, prompt_tokens_details: { cached_tokens: 0 } });
  });

  it('takes the vendor key as the SDK sends it (Authorization: Bearer sk-…) beside x-gw-key', async () => {
    const before = fake.received.length;
    const sdk = new OpenAI({ apiKey: 'sk-as-the-sdk-sends-it', baseURL: `${gw.url}/v1`, defaultHeaders: { 'x-gw-key': devKey }, maxRetries: 0 });
    const reply = await sdk.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(reply.model, 'gpt-4o-mini');
    assert.equal(fake.received[before]?.headers['authorization'], 'Bearer sk-as-the-sdk-sends-it');
  });

  it('x-gw-provider-key wins over a vendor key on Authorization', async () => {
    const before = fake.received.length;
    const sdk = new OpenAI({ apiKey: 'sk-on-authorization', baseURL: `${gw.url}/v1`, defaultHeaders: { 'x-gw-key': devKey, 'x-gw-provider-key': 'sk-explicit' }, maxRetries: 0 });
    await sdk.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(fake.received[before]?.headers['authorization'], 'Bearer sk-explicit');
  });

  it('never sends a gw_ key or any x-gw-* header upstream', async () => {
    await client(devKey, { 'x-gw-provider-key': 'sk-upstream-test', 'x-gw-session': 'sess-1', 'x-gw-team': 'red' }).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    const wire = Buffer.concat(fake.rawConnections.flat()).toString('latin1');
    assert.equal(wire.includes(devKey), false);
    assert.equal(/\r\nx-gw-/i.test(wire), false);
  });

  it('a 2xx reply that is not JSON is upstream_truncated on this route, whatever content type it claims', async () => {
    const err = await client()
      .chat.completions.create({ model: 'plain_text', messages: [{ role: 'user', content: 'hi' }] })
      .then(() => assert.fail('expected 502'), (e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIError);
    assert.equal(err.status, 502);
    assert.equal(err.headers?.get('x-gw-error'), 'upstream_truncated');
  });

  it('refuses a developer key on x-gw-provider-key (400) rather than forward it', async () => {
    const before = fake.received.length;
    const err = await client(devKey, { 'x-gw-provider-key': devKey })
      .chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] })
      .then(() => assert.fail('expected 400'), (e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIError);
    assert.equal(err.status, 400);
    assert.equal(err.headers?.get('x-gw-error'), 'request_error');
    assert.equal(fake.received.length, before, 'nothing went upstream');
  });

  it('relays the vendor\'s headers and adds the gateway\'s own', async () => {
    const { response, request_id } = await client().chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    assert.equal(request_id, 'req_fake_openai');
    assert.equal(response.headers.get('openai-processing-ms'), '12');
    assert.equal(response.headers.get('x-gw-served-by'), 'pipeline');
    assert.match(response.headers.get('x-gw-stage-durations') ?? '', /auth;dur=/);
    // a whole reply: the upstream stage is finished, not running
    assert.match(response.headers.get('x-gw-stage-durations') ?? '', /upstream_openai;dur=[\d.]+$/);
    assert.ok(response.headers.get('x-gw-request-id'));
  });

  it('a stream keeps the vendor\'s content type and carries the gateway headers on its status line', async () => {
    const { data: stream, response } = await client().chat.completions.create({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    assert.match(response.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.equal(response.headers.get('x-gw-served-by'), 'pipeline');
    assert.ok(response.headers.get('x-gw-request-id'));
    const chunks: string[] = [];
    for await (const c of stream) chunks.push(c.choices[0]?.delta.content ?? '');
    assert.deepEqual(chunks, ['', 'Hello', ' from', ' the', ' fake.', '']);
  });

  it('passes the vendor\'s reply through untouched (no re-serialization)', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gw-key': devKey, 'x-gw-provider-key': 'sk-upstream-test' },
      body: '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"unknown_field":{"kept":true}}',
    });
    assert.equal(await res.text(), JSON.stringify(completion('gpt-4o')));
    assert.deepEqual(JSON.parse(fake.received.at(-1)?.body.toString() ?? '{}').unknown_field, { kept: true });
  });
});

describe('chat-completions with an empty skills table', () => {
  let fake: FakeVendor;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('acme');

  before(async () => {
    fake = await startFakeOpenAI();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin }, skillRows: [] });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  it('relays without a skill and still times the skills stage; x-gw-skills is still validated', async () => {
    const client = (headers: Record<string, string>) => new OpenAI({ apiKey: devKey, baseURL: `${gw.url}/v1`, defaultHeaders: { 'x-gw-provider-key': 'sk-upstream-test', ...headers }, maxRetries: 0 });
    const { data, response } = await client({}).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    assert.equal(data.choices[0]?.message.content, 'Hello from the fake.');
    assert.match(response.headers.get('x-gw-stage-durations') ?? '', /, skills;dur=[\d.]+, /);
    assert.equal([...response.headers.keys()].some((h) => h.startsWith('x-gw-skill-')), false);
    const err = await client({ 'x-gw-skills': 'no_such_skill=prod' })
      .chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] })
      .then(() => assert.fail('expected 400'), (e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIError);
    assert.equal(err.status, 400);
  });
});
