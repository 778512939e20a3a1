import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { SIGNATURE, startFakeAnthropic, TEXT, THINKING } from '../fakes/anthropic.js';
import type { FakeVendor } from '../fakes/server.js';
import { oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const IMAGE = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

/** A request with everything the messages surface promises to relay as sent. */
const fullRequest = (model = 'claude-sonnet-4-5-20250929') => ({
  model,
  max_tokens: 2048,
  thinking: { type: 'enabled' as const, budget_tokens: 1024 },
  system: [{ type: 'text' as const, text: 'You are terse.', cache_control: { type: 'ephemeral' as const } }],
  tools: [{ name: 'get_weather', description: 'Weather for a city', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] } }],
  messages: [
    {
      role: 'user' as const,
      content: [
        { type: 'image' as const, source: { type: 'base64' as const, media_type: 'image/png' as const, data: IMAGE } },
        { type: 'text' as const, text: 'What is this?', cache_control: { type: 'ephemeral' as const } },
      ],
    },
    { role: 'assistant' as const, content: [{ type: 'thinking' as const, thinking: THINKING, signature: SIGNATURE }, { type: 'tool_use' as const, id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }] },
    { role: 'user' as const, content: [{ type: 'tool_result' as const, tool_use_id: 'toolu_1', content: 'cold' }] },
  ],
});

describe('messages surface through @anthropic-ai/sdk', () => {
  let fake: FakeVendor;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('msgs');

  before(async () => {
    fake = await startFakeAnthropic();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_MSGVENDOR: fake.origin, GW_UPSTREAM_GENVENDOR_VERTEX: fake.origin } });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  const client = (opts: { apiKey?: string | null; authToken?: string | null; headers?: Record<string, string> } = {}) =>
    new Anthropic({
      apiKey: opts.apiKey === undefined ? devKey : opts.apiKey,
      authToken: opts.authToken ?? null,
      baseURL: `${gw.url}/msgvendor`,
      defaultHeaders: opts.headers ?? { 'x-gw-provider-key': 'sk-ant-vendor' },
      maxRetries: 0,
    });

  it('relays thinking, tools, images and cache_control byte for byte; the signature comes back', async () => {
    const n = fake.received.length;
    const reply = await client().messages.create(fullRequest(), { headers: { 'anthropic-version': '2023-06-01', 'anthropic-beta': 'interleaved-thinking-2025-05-14' } });
    assert.deepEqual(reply.content[0], { type: 'thinking', thinking: THINKING, signature: SIGNATURE });
    const got = fake.received[n]!;
    assert.equal(got.url, '/v1/messages');
    assert.deepEqual(JSON.parse(got.body.toString()), fullRequest());
    assert.equal(got.headers['x-api-key'], 'sk-ant-vendor');
    assert.equal(got.headers['anthropic-version'], '2023-06-01');
    assert.equal(got.headers['anthropic-beta'], 'interleaved-thinking-2025-05-14');
    assert.equal(got.headers['authorization'], undefined);
    assert.ok(!JSON.stringify(got.headers).includes(devKey));
  });

  it('the body reaches the vendor as the exact bytes sent', async () => {
    const n = fake.received.length;
    const raw = '{ "max_tokens":16,\n  "model" : "claude-haiku-4-5", "messages":[{"role":"user","content":"h\\u00e9llo"}] }';
    const res = await fetch(`${gw.url}/msgvendor/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': devKey, 'x-gw-provider-key': 'sk-ant-vendor', 'anthropic-version': '2023-06-01' }, body: raw });
    assert.equal(res.status, 200);
    assert.equal(fake.received[n]!.body.toString('utf8'), raw);
  });

  it('streams event by event: thinking_delta and signature_delta arrive and assemble', async () => {
    const stream = client().messages.stream(fullRequest());
    const types: string[] = [];
    stream.on('streamEvent', (e) => types.push(e.type === 'content_block_delta' ? `delta:${e.delta.type}` : e.type));
    const final = await stream.finalMessage();
    assert.deepEqual(final.content[0], { type: 'thinking', thinking: THINKING, signature: SIGNATURE });
    assert.equal(final.content[1]?.type === 'text' && final.content[1].text, TEXT);
    assert.deepEqual(types, [
      'message_start',
      'content_block_start',
      'delta:thinking_delta',
      'delta:signature_delta',
      'content_block_stop',
      'content_block_start',
      'ping',
      'delta:text_delta',
      'delta:text_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ].filter((t) => t !== 'ping'));
  });

  it('the developer key may ride as Authorization: Bearer gw_… (authToken)', async () => {
    const n = fake.received.length;
    await client({ apiKey: null, authToken: devKey }).messages.create({ model: 'claude-haiku-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
    const got = fake.received[n]!;
    assert.equal(got.headers['x-api-key'], 'sk-ant-vendor');
    assert.equal(got.headers['authorization'], undefined);
  });

  it('a vendor bearer credential presented as Authorization goes upstream as Authorization', async () => {
    const n = fake.received.length;
    await client({ apiKey: null, authToken: 'sk-ant-oat01-vendor-token', headers: { 'x-gw-key': devKey } }).messages.create({ model: 'claude-haiku-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
    const got = fake.received[n]!;
    assert.equal(got.headers['authorization'], 'Bearer sk-ant-oat01-vendor-token');
    assert.equal(got.headers['x-api-key'], undefined);
  });

  it('a vendor 429 is relayed as the vendor sent it, without x-gw-error', async () => {
    const err = await client()
      .messages.create({ model: 'error_429', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    assert.ok(err instanceof Anthropic.RateLimitError);
    assert.equal(err.headers.get('x-gw-error'), null);
    assert.deepEqual(err.error, { type: 'error', error: { type: 'rate_limit_error', message: 'scripted 429' }, request_id: 'req_fake_error' });
  });

  it('a vendor error event mid-stream is relayed and the SDK raises it', async () => {
    const stream = client().messages.stream({ model: 'overloaded_stream', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
    const err = await stream.finalMessage().catch((e: unknown) => e);
    assert.ok(err instanceof Anthropic.APIError);
    assert.match(String(err.message), /overloaded_error/);
  });

  it('gateway errors use the messages envelope and carry x-gw-error', async () => {
    const err = await client({ apiKey: 'gw_not_a_key' })
      .messages.create({ model: 'claude-haiku-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    assert.ok(err instanceof Anthropic.AuthenticationError);
    assert.equal(err.headers.get('x-gw-error'), 'invalid_developer_key');
    assert.equal((err.error as { type: string }).type, 'error');
    assert.equal((err.error as { error: { type: string } }).error.type, 'invalid_developer_key');
  });

  it('a truncated 2xx reply is 502 upstream_truncated, never a 200', async () => {
    const err = await client()
      .messages.create({ model: 'truncated', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    assert.ok(err instanceof Anthropic.InternalServerError);
    assert.equal(err.status, 502);
    assert.equal(err.headers.get('x-gw-error'), 'upstream_truncated');
  });

  it('x-gw-provider names only the providers that serve messages', async () => {
    const res = await fetch(`${gw.url}/msgvendor/v1/messages`, { method: 'POST', headers: { 'x-api-key': devKey, 'x-gw-provider': 'openai' }, body: '{"model":"claude-haiku-4-5","max_tokens":8,"messages":[]}' });
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('x-gw-error'), 'request_error');
  });

  describe('on Vertex (x-gw-provider: genvendor_vertex)', () => {
    const vertexHeaders = (extra: Record<string, string> = {}) => ({
      'x-gw-provider': 'genvendor_vertex',
      'x-gw-vertex-project': 'my-project-42',
      'x-gw-vertex-location': 'us-east5',
      'x-gw-provider-key': 'ya29.oauth-token',
      ...extra,
    });

    it('non-stream goes to rawPredict with the model in the path and anthropic_version in the body', async () => {
      const n = fake.received.length;
      const reply = await client({ headers: vertexHeaders() }).messages.create(fullRequest('claude-sonnet-4-5@20250929'));
      assert.equal(reply.content[0]?.type, 'thinking');
      const got = fake.received[n]!;
      assert.equal(got.url, '/v1/projects/my-project-42/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict');
      assert.equal(got.headers['authorization'], 'Bearer ya29.oauth-token');
      const { model: _model, ...rest } = fullRequest();
      assert.deepEqual(JSON.parse(got.body.toString()), { ...rest, anthropic_version: 'vertex-2023-10-16' });
    });

    it('stream goes to streamRawPredict and comes back event by event', async () => {
      const n = fake.received.length;
      const final = await client({ headers: vertexHeaders() }).messages.stream(fullRequest('claude-sonnet-4-5@20250929')).finalMessage();
      assert.equal(final.content[0]?.type, 'thinking');
      assert.match(fake.received[n]!.url, /:streamRawPredict$/);
    });

    it('a caller-chosen project or location outside the allowlist is refused before any upstream call', async () => {
      for (const [h, v] of [
        ['x-gw-vertex-location', 'evil.com/x'],
        ['x-gw-vertex-location', 'us-east5.attacker.net'],
        ['x-gw-vertex-project', '../../other'],
      ] as const) {
        const n = fake.received.length;
        const err = await client({ headers: vertexHeaders({ [h]: v }) })
          .messages.create({ model: 'claude-haiku-4-5@20251001', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })
          .catch((e: unknown) => e);
        assert.ok(err instanceof Anthropic.BadRequestError, `${h}: ${v}`);
        assert.equal(err.headers.get('x-gw-error'), 'request_error');
        assert.equal(fake.received.length, n);
      }
    });
  });

  describe('count_tokens', () => {
    it('is relayed to the vendor with the call credential', async () => {
      const n = fake.received.length;
      const res = await client().messages.countTokens({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'hello there' }] }).withResponse();
      assert.deepEqual(res.data, { input_tokens: 42 });
      assert.equal(res.response.headers.get('x-gw-token-count-source'), 'vendor');
      assert.equal(fake.received[n]!.url, '/v1/messages/count_tokens');
      assert.equal(fake.received[n]!.headers['x-api-key'], 'sk-ant-vendor');
    });

    it('with no vendor credential at all answers a local tokenizer estimate, marked as such', async () => {
      const n = fake.received.length;
      const text = 'The quick brown fox jumps over the lazy dog. '.repeat(20);
      const res = await client({ headers: {} }).messages.countTokens({ model: 'claude-sonnet-4-5', system: 'Be brief.', messages: [{ role: 'user', content: text }] }).withResponse();
      assert.equal(res.response.headers.get('x-gw-token-count-source'), 'local_estimate');
      assert.equal(fake.received.length, n, 'the vendor was not asked');
      // 20 × 10 tokens of text plus framing: a tokenizer, not a character ratio (900 chars / 4 = 225)
      assert.ok(res.data.input_tokens >= 200 && res.data.input_tokens <= 230, String(res.data.input_tokens));
    });

    it('on Vertex goes to the count-tokens model', async () => {
      const n = fake.received.length;
      const res = await client({ headers: vertexHeaders() }).messages.countTokens({ model: 'claude-sonnet-4-5@20250929', messages: [{ role: 'user', content: 'hi' }] });
      assert.deepEqual(res, { input_tokens: 42 });
      assert.equal(fake.received[n]!.url, '/v1/projects/my-project-42/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict');
      assert.equal(JSON.parse(fake.received[n]!.body.toString()).anthropic_version, 'vertex-2023-10-16');
    });

    function vertexHeaders() {
      return { 'x-gw-provider': 'genvendor_vertex', 'x-gw-vertex-project': 'my-project-42', 'x-gw-vertex-location': 'us-east5', 'x-gw-provider-key': 'ya29.oauth-token' };
    }
  });
});

describe('messages surfaces with stored provider keys', () => {
  let fake: FakeVendor;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('msgs-stored');

  before(async () => {
    fake = await startFakeAnthropic();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_MSGVENDOR: fake.origin, GW_UPSTREAM_GENVENDOR_VERTEX: fake.origin } });
    for (const body of [
      { provider: 'msgvendor', api_key: 'sk-ant-stored' },
      { provider: 'genvendor_vertex', api_key: 'ya29.stored-token', project: 'stored-project', location: 'europe-west1' },
    ]) {
      const res = await fetch(`${gw.url}/api/v1/vendor_key/create`, { method: 'POST', headers: { authorization: `Bearer ${devKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      assert.equal(res.status, 200, await res.text());
    }
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  const client = (headers: Record<string, string> = {}) => new Anthropic({ apiKey: devKey, baseURL: `${gw.url}/msgvendor`, defaultHeaders: headers, maxRetries: 0 });

  it('the stored vendor key goes upstream on x-api-key', async () => {
    const n = fake.received.length;
    await client().messages.create({ model: 'claude-haiku-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(fake.received[n]!.headers['x-api-key'], 'sk-ant-stored');
  });

  it('count_tokens asks the vendor with the stored key', async () => {
    const res = await client().messages.countTokens({ model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    assert.equal(res.response.headers.get('x-gw-token-count-source'), 'vendor');
    assert.deepEqual(res.data, { input_tokens: 42 });
  });

  it('Vertex takes project, location and token from the stored key', async () => {
    const n = fake.received.length;
    await client({ 'x-gw-provider': 'genvendor_vertex' }).messages.create({ model: 'claude-haiku-4-5@20251001', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
    const got = fake.received[n]!;
    assert.equal(got.url, '/v1/projects/stored-project/locations/europe-west1/publishers/anthropic/models/claude-haiku-4-5@20251001:rawPredict');
    assert.equal(got.headers['authorization'], 'Bearer ya29.stored-token');
  });
});
