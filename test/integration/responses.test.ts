import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI, { AzureOpenAI } from 'openai';
import { responseObject, startFakeAzure } from '../fakes/azure.js';
import type { FakeVendor } from '../fakes/server.js';
import { oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/** A Responses request with the fields that must go upstream as sent. */
const request = (model: string) => ({
  model,
  input: [
    { role: 'user' as const, content: [{ type: 'input_text' as const, text: 'Hi there' }] },
    { type: 'reasoning' as const, id: 'rs_prev', summary: [], encrypted_content: 'gAAAAABprevious-encrypted==' },
    { type: 'function_call_output' as const, call_id: 'call_1', output: '{"temp":3}' },
  ],
  reasoning: { effort: 'low' as const, summary: 'auto' as const },
  store: false,
  include: ['reasoning.encrypted_content' as const],
});

describe('responses surface through the openai SDK', () => {
  let fake: FakeVendor;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('resp');

  before(async () => {
    fake = await startFakeAzure();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin, GW_UPSTREAM_CLOUDX: fake.origin } });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  const openai = () => new OpenAI({ apiKey: devKey, baseURL: `${gw.url}/v1`, defaultHeaders: { 'x-gw-provider-key': 'sk-openai-vendor' }, maxRetries: 0 });

  it('POST /v1/responses: items, reasoning, store, include go upstream byte for byte; the object comes back verbatim', async () => {
    const n = fake.received.length;
    const res = await openai().responses.create(request('o4-mini')).withResponse();
    assert.equal(res.data.output_text, 'Hello from the fake.');
    const got = fake.received[n]!;
    assert.equal(got.url, '/v1/responses');
    assert.deepEqual(JSON.parse(got.body.toString()), request('o4-mini'));
    assert.equal(got.headers['authorization'], 'Bearer sk-openai-vendor');
    assert.equal(res.data.output[0]?.type === 'reasoning' && res.data.output[0].encrypted_content, 'gAAAAABfakeEncryptedReasoning==');
  });

  it('the reply bytes are the vendor bytes', async () => {
    const res = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${devKey}`, 'x-gw-provider-key': 'sk' }, body: JSON.stringify(request('o3')) });
    assert.equal(await res.text(), JSON.stringify(responseObject('o3')));
  });

  it('streams the response.* events in order', async () => {
    const stream = await openai().responses.create({ ...request('gpt-4.1'), stream: true });
    const types: string[] = [];
    for await (const ev of stream) types.push(ev.type);
    assert.deepEqual(types, [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
  });

  it('a vendor error event mid-stream is relayed as the vendor sent it', async () => {
    const stream = await openai().responses.create({ ...request('fail_stream'), stream: true });
    const events: Array<{ type: string; code?: string | null }> = [];
    for await (const ev of stream) events.push(ev as { type: string; code?: string | null });
    assert.deepEqual(events.at(-1), { type: 'error', sequence_number: 3, code: 'server_error', message: 'scripted failure', param: null });
  });

  it('a model another provider serves is 400 request_error saying so', async () => {
    const err = await openai()
      .responses.create(request('claude-sonnet-4-5'))
      .catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.BadRequestError);
    assert.equal(err.headers.get('x-gw-error'), 'request_error');
    assert.match(err.message, /msgvendor.*openai and cloudx/);
  });

  it('a vendor 401 for a bad pass-through key is relayed without x-gw-error', async () => {
    const err = await openai()
      .responses.create(request('error_401'))
      .catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.AuthenticationError);
    assert.equal(err.headers.get('x-gw-error'), null);
  });

  describe('cloudx forms', () => {
    it('AzureOpenAI: the developer key on api-key, the deployment as model, api-version as sent', async () => {
      const azure = new AzureOpenAI({ endpoint: `${gw.url}/cloudx/compat`, apiKey: devKey, apiVersion: '2025-04-01-preview', defaultHeaders: { 'x-gw-provider-key': 'azure-resource-key' }, maxRetries: 0 });
      const n = fake.received.length;
      const reply = await azure.responses.create(request('my-o4-deployment'));
      assert.equal(reply.output_text, 'Hello from the fake.');
      const got = fake.received[n]!;
      assert.equal(got.url, '/openai/responses?api-version=2025-04-01-preview');
      assert.equal(got.headers['api-key'], 'azure-resource-key');
      assert.deepEqual(JSON.parse(got.body.toString()), request('my-o4-deployment'));
    });

    it('AzureOpenAI with a directory token: the Entra bearer passes upstream intact', async () => {
      const azure = new AzureOpenAI({
        endpoint: `${gw.url}/cloudx/compat`,
        azureADTokenProvider: async () => 'eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.entra.token',
        apiVersion: '2025-04-01-preview',
        defaultHeaders: { 'x-gw-key': devKey },
        maxRetries: 0,
      });
      const n = fake.received.length;
      const stream = await azure.responses.create({ ...request('my-o4-deployment'), stream: true });
      let last = '';
      for await (const ev of stream) last = ev.type;
      assert.equal(last, 'response.completed');
      assert.equal(fake.received[n]!.headers['authorization'], 'Bearer eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.entra.token');
    });

    it('the v1 API (/cloudx/compat/v1/responses) with the OpenAI SDK', async () => {
      const client = new OpenAI({ apiKey: devKey, baseURL: `${gw.url}/cloudx/compat/v1`, defaultQuery: { 'api-version': 'preview' }, defaultHeaders: { 'x-gw-provider-key': 'azure-resource-key' }, maxRetries: 0 });
      const n = fake.received.length;
      await client.responses.create(request('my-deployment'));
      assert.equal(fake.received[n]!.url, '/openai/v1/responses?api-version=preview');
    });

    for (const [path, upstream] of [
      ['/cloudx/compat/responses?api-version=2025-03-01-preview', '/openai/responses?api-version=2025-03-01-preview'],
      ['/compat/v1/responses', '/openai/v1/responses'],
    ] as const) {
      it(`${path} relays to ${upstream}`, async () => {
        const n = fake.received.length;
        const body = JSON.stringify(request('dep'));
        const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'api-key': devKey, 'x-gw-provider-key': 'k' }, body });
        assert.equal(res.status, 200);
        assert.equal(fake.received[n]!.url, upstream);
        assert.equal(fake.received[n]!.body.toString(), body);
      });
    }
  });
});
