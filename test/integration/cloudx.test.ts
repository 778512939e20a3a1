import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { APIError, AzureOpenAI } from 'openai';
import { GatewayError } from '../../src/errors.js';
import { cloudxEndpoint } from '../../src/providers/cloudx.js';
import { SPEECH, startFakeAzure } from '../fakes/azure.js';
import type { FakeVendor } from '../fakes/server.js';
import { oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const API_VERSION = '2024-10-21';

describe('cloudx /cloudx/compat/… through AzureOpenAI', () => {
  let fake: FakeVendor;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('azure');

  before(async () => {
    fake = await startFakeAzure();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_CLOUDX: fake.origin } });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  const azure = (headers: Record<string, string> = { 'x-gw-provider-key': 'azure-resource-key' }) =>
    new AzureOpenAI({ endpoint: `${gw.url}/cloudx/compat`, apiKey: devKey, apiVersion: API_VERSION, defaultHeaders: headers, maxRetries: 0 });

  it('deployment chat completions: path, query and body relayed as sent, key on api-key', async () => {
    const n = fake.received.length;
    const reply = await azure().chat.completions.create({ model: 'gpt-4o-prod', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(reply.choices[0]?.message.content, 'Hello from the fake.');
    const got = fake.received[n]!;
    assert.equal(got.url, `/openai/deployments/gpt-4o-prod/chat/completions?api-version=${API_VERSION}`);
    assert.equal(got.headers['api-key'], 'azure-resource-key');
    assert.deepEqual(JSON.parse(got.body.toString()), { model: 'gpt-4o-prod', messages: [{ role: 'user', content: 'hi' }] });
    assert.ok(!JSON.stringify(got.headers).includes(devKey));
  });

  it('streams', async () => {
    const stream = await azure().chat.completions.create({ model: 'gpt-4o-prod', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
    assert.equal(text, 'Hello from Azure.');
  });

  it('embeddings', async () => {
    const n = fake.received.length;
    const reply = await azure().embeddings.create({ model: 'embed-small', input: 'hello', encoding_format: 'float' });
    assert.deepEqual(reply.data[0]?.embedding, [0.25, -0.5, 0.125]);
    assert.equal(fake.received[n]!.url, `/openai/deployments/embed-small/embeddings?api-version=${API_VERSION}`);
  });

  it('relays a 2xx reply that is not JSON (text-to-speech audio) as the vendor sent it', async () => {
    const speech = await azure().audio.speech.create({ model: 'tts', voice: 'alloy', input: 'hello' });
    assert.equal(speech.headers.get('content-type'), 'audio/mpeg');
    assert.equal(speech.headers.get('x-gw-error'), null);
    assert.deepEqual(Buffer.from(await speech.arrayBuffer()), SPEECH);
  });

  it('a non-gw_ api-key is a pass-through Azure key; the developer key rides on x-gw-key', async () => {
    const n = fake.received.length;
    const res = await fetch(`${gw.url}/cloudx/compat/openai/deployments/d1/chat/completions?api-version=${API_VERSION}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'api-key': 'azure-key-presented', 'x-gw-key': devKey },
      body: '{"messages":[{"role":"user","content":"hi"}]}',
    });
    assert.equal(res.status, 200);
    assert.equal(fake.received[n]!.headers['api-key'], 'azure-key-presented');
    assert.equal(fake.received[n]!.headers['authorization'], undefined);
  });

  it('a directory (Entra) token presented as Bearer passes upstream intact', async () => {
    const client = new AzureOpenAI({
      endpoint: `${gw.url}/cloudx/compat`,
      azureADTokenProvider: async () => 'entra-token-abc.def',
      apiVersion: API_VERSION,
      defaultHeaders: { 'x-gw-key': devKey },
      maxRetries: 0,
    });
    const n = fake.received.length;
    await client.chat.completions.create({ model: 'gpt-4o-prod', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(fake.received[n]!.headers['authorization'], 'Bearer entra-token-abc.def');
    assert.equal(fake.received[n]!.headers['api-key'], undefined);
  });

  it('vendor errors are relayed without x-gw-error; gateway errors carry it', async () => {
    const err = await azure()
      .chat.completions.create({ model: 'error_429', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    assert.ok(err instanceof APIError);
    assert.equal(err.status, 429);
    assert.equal(err.headers?.get('x-gw-error'), null);
    assert.deepEqual(err.error, { code: '429', message: 'scripted 429' });

    const noVendor = await azure({})
      .chat.completions.create({ model: 'gpt-4o-prod', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    assert.ok(noVendor instanceof APIError);
    assert.equal(noVendor.status, 402);
    assert.equal(noVendor.headers?.get('x-gw-error'), 'onboarding_incomplete');
  });
});

describe('cloudx resource endpoints without an override: never an open proxy', () => {
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('azure-ssrf');

  before(async () => {
    gw = await startTestGateway({ bootstrap });
  });
  after(async () => gw.close());

  const call = (headers: Record<string, string>) =>
    fetch(`${gw.url}/cloudx/compat/openai/deployments/d/chat/completions?api-version=${API_VERSION}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'api-key': devKey, ...headers },
      body: '{"messages":[]}',
    });

  const refused = [
    'http://myres.openai.azure.com',
    'https://127.0.0.1',
    'https://evil.example.com',
    'https://myres.openai.azure.com.evil.com',
    'https://evil.com#.openai.azure.com',
    'https://evil.com?.openai.azure.com',
    'https://user:pw@myres.openai.azure.com',
    'https://evil.com@myres.openai.azure.com',
    'https://myres.openai.azure.com@evil.com',
    'https://evil.com\\@myres.openai.azure.com',
    'https://myres.openai.azure.com:8443',
    'https://myres.openai.azure.com/path',
    'https://a.b.openai.azure.com',
    'https://openai.azure.com',
    'https://myres.openai.azure.com.',
    'https://169.254.169.254',
    'file:///etc/passwd',
  ];
  for (const endpoint of refused) {
    it(`refuses x-gw-azure-endpoint ${endpoint}`, async () => {
      const res = await call({ 'x-gw-azure-endpoint': endpoint, 'x-gw-provider-key': 'k' });
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('x-gw-error'), 'request_error');
    });
  }

  it('no endpoint at all is 400 request_error; no credential is 402 first', async () => {
    const noEndpoint = await call({ 'x-gw-provider-key': 'k' });
    assert.equal(noEndpoint.status, 400);
    assert.equal(noEndpoint.headers.get('x-gw-error'), 'request_error');
    const noCredential = await call({});
    assert.equal(noCredential.status, 402);
  });

  it('the allowlist accepts exactly the two Azure service domains', () => {
    assert.equal(cloudxEndpoint('https://myres.openai.azure.com'), 'https://myres.openai.azure.com');
    assert.equal(cloudxEndpoint('https://My-Res.cognitiveservices.azure.com/'), 'https://my-res.cognitiveservices.azure.com');
    for (const bad of refused) assert.throws(() => cloudxEndpoint(bad), GatewayError, bad);
  });
});

describe('cloudx with a stored key', () => {
  let fake: FakeVendor;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('azure-stored');

  before(async () => {
    fake = await startFakeAzure();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_CLOUDX: fake.origin } });
    const res = await fetch(`${gw.url}/api/v1/vendor_key/create`, {
      method: 'POST',
      headers: { authorization: `Bearer ${devKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'cloudx', api_key: 'azure-stored-key', endpoint: 'https://myres.openai.azure.com' }),
    });
    assert.equal(res.status, 200, await res.text());
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  it('relays with the stored key on api-key; the developer key stays home', async () => {
    const client = new AzureOpenAI({ endpoint: `${gw.url}/cloudx/compat`, apiKey: devKey, apiVersion: API_VERSION, maxRetries: 0 });
    const n = fake.received.length;
    await client.chat.completions.create({ model: 'gpt-4o-prod', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(fake.received[n]!.headers['api-key'], 'azure-stored-key');
  });
});
