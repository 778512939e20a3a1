import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApiError, GoogleGenAI, type Content } from '@google/genai';
import { geminiStreamChunks, googleError, startFakeGemini, THOUGHT_SIGNATURE } from '../fakes/gemini.js';
import type { FakeVendor, Recorded } from '../fakes/server.js';
import { oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually } from '../helpers/wait.js';

const VENDOR_KEY = 'AIzaSy-upstream-test-key';
const OAUTH_TOKEN = 'ya29.vertex-oauth-token';
const IDLE_S = 0.5;

/** A model turn with a thought part and a thoughtSignature, sent back in the history as the SDK docs ask. */
const HISTORY: Content[] = [
  { role: 'user', parts: [{ text: 'hi' }] },
  { role: 'model', parts: [{ text: 'Earlier thinking.', thought: true }, { text: 'Hello!', thoughtSignature: 'UHJldmlvdXNTaWduYXR1cmU=' }] },
  { role: 'user', parts: [{ text: 'and again' }] },
];

describe('generate-content relay through the @google/genai SDK', () => {
  let fake: FakeVendor;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('gen');
  /** the request bodies the SDK put on the wire, in order */
  const sentBodies: string[] = [];

  before(async () => {
    fake = await startFakeGemini();
    gw = await startTestGateway({
      bootstrap,
      env: { GW_UPSTREAM_GENVENDOR: fake.origin, GW_UPSTREAM_GENVENDOR_VERTEX: fake.origin, GW_STREAM_IDLE_S: String(IDLE_S) },
    });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  const recordingFetch: typeof fetch = (input, init) => {
    if (typeof init?.body === 'string') sentBodies.push(init.body);
    return fetch(input, init);
  };
  const client = (headers: Record<string, string> = { 'x-gw-provider-key': VENDOR_KEY }, apiKey = devKey) =>
    new GoogleGenAI({ apiKey, httpOptions: { baseUrl: `${gw.url}/genvendor`, headers, retryOptions: { attempts: 1 }, fetch: recordingFetch } });

  const next = (): { received: () => Recorded } => {
    const n = fake.received.length;
    return {
      received: () => {
        const rec = fake.received[n];
        assert.ok(rec, 'the fake received the call');
        return rec;
      },
    };
  };
  const raw = (path: string, headers: Record<string, string>, body = '{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}', signal?: AbortSignal) =>
    fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body, signal });

  it('relays generateContent: body byte for byte, thought parts and thoughtSignature both ways, vendor key on x-goog-api-key', async () => {
    const call = next();
    const reply = await client().models.generateContent({ model: 'gemini-2.5-flash', contents: HISTORY, config: { thinkingConfig: { includeThoughts: true } } });
    const parts = reply.candidates?.[0]?.content?.parts ?? [];
    assert.deepEqual(parts[0], { text: 'Weighing a greeting.', thought: true });
    assert.equal(parts[1]?.thoughtSignature, THOUGHT_SIGNATURE);
    assert.equal(reply.usageMetadata?.thoughtsTokenCount, 3);
    const rec = call.received();
    assert.equal(rec.url, '/v1beta/models/gemini-2.5-flash:generateContent');
    assert.equal(rec.body.toString('utf8'), sentBodies.at(-1), 'the GenerateContentRequest reached the vendor as written');
    assert.ok(rec.body.includes('"thoughtSignature":"UHJldmlvdXNTaWduYXR1cmU="'));
    assert.equal(rec.headers['x-goog-api-key'], VENDOR_KEY);
    assert.equal(rec.headers['authorization'], undefined);
    assert.equal(Object.keys(rec.headers).some((h) => h.startsWith('x-gw-')), false);
    assert.equal(rec.rawHeaders.some((v) => v.includes(devKey)), false, 'the developer key never goes upstream');
  });

  it('streams streamGenerateContent?alt=sse chunk by chunk; the relayed bytes are the vendor bytes', async () => {
    let text = '';
    let signature: string | undefined;
    for await (const chunk of await client().models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'hi' })) {
      text += chunk.text ?? '';
      signature ??= chunk.candidates?.[0]?.content?.parts?.find((p) => p.thoughtSignature)?.thoughtSignature;
    }
    assert.equal(text, 'Hello from the fake.');
    assert.equal(signature, THOUGHT_SIGNATURE);
    const call = next();
    const res = await raw('/genvendor/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', { 'x-goog-api-key': devKey, 'x-gw-provider-key': VENDOR_KEY });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    assert.equal(await res.text(), geminiStreamChunks('gemini-2.5-flash').join(''));
    assert.equal(call.received().url, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
  });

  it('takes the developer key on x-goog-api-key, query key (stripped upstream), Bearer and x-gw-key', async () => {
    for (const [path, headers] of [
      ['?alt=sse&key=' + devKey, {}],
      ['?alt=sse', { authorization: `Bearer ${devKey}` }],
      ['?alt=sse', { 'x-gw-key': devKey }],
    ] as const) {
      const call = next();
      const res = await raw(`/genvendor/v1beta/models/gemini-2.5-flash:streamGenerateContent${path}`, { ...headers, 'x-gw-provider-key': VENDOR_KEY });
      assert.equal(res.status, 200, await res.text());
      const rec = call.received();
      assert.equal(rec.url, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
      assert.equal(rec.headers['x-goog-api-key'], VENDOR_KEY);
    }
  });

  it('never sends a gw_ value upstream, however the query spells it (percent-encoded name or value, +, repeated, other params)', async () => {
    const encoded = [...devKey].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).join('');
    for (const query of [
      `?alt=sse&%6Bey=${devKey}`,
      `?alt=sse&k%65y=${encoded}`,
      `?alt=sse&key=AIza-not-mine&key=${devKey}`,
      `?alt=sse&%6B%65%79=${devKey}&trace=${devKey}`,
      `?alt=sse&note=Bearer+${devKey}`,
      `?alt=sse&x=${encoded}`,
    ]) {
      const call = next();
      const res = await raw(`/genvendor/v1beta/models/gemini-2.5-flash:streamGenerateContent${query}`, { 'x-gw-key': devKey, 'x-gw-provider-key': VENDOR_KEY });
      assert.equal(res.status, 200, `${query}: ${await res.text()}`);
      const url = call.received().url;
      assert.equal(url, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', query);
      assert.equal(url.includes(devKey.slice(3)) || url.includes(encoded.slice(9)), false, query);
    }
    // the rest of the query goes as sent, byte for byte
    const call = next();
    const res = await raw(`/genvendor/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&%6Bey=${devKey}&q=a%20b+c&flag`, { 'x-gw-provider-key': VENDOR_KEY });
    assert.equal(res.status, 200, 'the percent-encoded key name is the developer key carrier too');
    assert.equal(call.received().url, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&q=a%20b+c&flag');
  });

  it('passes a vendor key presented on x-goog-api-key through, beside the developer key on x-gw-key', async () => {
    const call = next();
    const res = await raw('/genvendor/v1beta/models/gemini-2.5-flash:generateContent', { 'x-gw-key': devKey, 'x-goog-api-key': VENDOR_KEY });
    assert.equal(res.status, 200);
    assert.equal(call.received().headers['x-goog-api-key'], VENDOR_KEY);
  });

  it('relays a vendor error as sent, without x-gw-error', async () => {
    await assert.rejects(client().models.generateContent({ model: 'error_429', contents: 'hi' }), (err: unknown) => err instanceof ApiError && err.status === 429);
    const res = await raw('/genvendor/v1beta/models/error_400:generateContent', { 'x-goog-api-key': devKey, 'x-gw-provider-key': VENDOR_KEY });
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('x-gw-error'), null);
    assert.deepEqual(await res.json(), googleError(400, 'scripted 400'));
  });

  it('answers its own errors in the Google envelope with x-gw-error', async () => {
    const noKey = await raw('/genvendor/v1beta/models/gemini-2.5-flash:generateContent', { 'x-goog-api-key': 'gw_not-a-key' });
    assert.equal(noKey.status, 401);
    assert.equal(noKey.headers.get('x-gw-error'), 'invalid_developer_key');
    assert.deepEqual(await noKey.json(), { error: { code: 401, message: 'developer key missing, invalid, revoked or expired', status: 'UNAUTHENTICATED', type: 'invalid_developer_key' } });
    await assert.rejects(client({}).models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' }), (err: unknown) => err instanceof ApiError && err.status === 402);
    const unknownMethod = await raw('/genvendor/v1beta/models/gemini-2.5-flash:embedContent', { 'x-goog-api-key': devKey });
    assert.equal(unknownMethod.status, 404);
    assert.equal(((await unknownMethod.json()) as { error: { status: string } }).error.status, 'NOT_FOUND');
  });

  it('turns a truncated 2xx body into 502 upstream_truncated', async () => {
    const res = await raw('/genvendor/v1beta/models/truncated:generateContent', { 'x-goog-api-key': devKey, 'x-gw-provider-key': VENDOR_KEY });
    assert.equal(res.status, 502);
    assert.equal(res.headers.get('x-gw-error'), 'upstream_truncated');
    const body = (await res.json()) as { error: { code: number; status: string; type: string } };
    assert.deepEqual([body.error.code, body.error.status, body.error.type], [502, 'UNAVAILABLE', 'upstream_truncated']);
  });

  it('closes an idle stream with one DEADLINE_EXCEEDED event the SDK raises as an ApiError', async () => {
    const stream = await client().models.generateContentStream({ model: 'stall_stream', contents: 'hi' });
    await assert.rejects(
      (async () => {
        for await (const _ of stream) {
          // the first chunk arrives, then silence
        }
      })(),
      (err: unknown) => err instanceof ApiError && err.status === 504 && err.message.includes('DEADLINE_EXCEEDED') && err.message.includes('gateway_timeout'),
    );
  });

  it('ends a stream broken mid-way with an error event, never a clean end', async () => {
    const res = await raw('/genvendor/v1beta/models/break_stream:streamGenerateContent?alt=sse', { 'x-goog-api-key': devKey, 'x-gw-provider-key': VENDOR_KEY });
    const text = await res.text();
    assert.equal(res.status, 200);
    const last = text.trimEnd().split('\r\n\r\n').at(-1) ?? '';
    assert.match(last, /^data: \{"error":\{.*"code":502/);
  });

  it('cancels the upstream call when the client goes away', async () => {
    const call = next();
    const ac = new AbortController();
    const res = await raw('/genvendor/v1beta/models/stall_stream:streamGenerateContent?alt=sse', { 'x-goog-api-key': devKey, 'x-gw-provider-key': VENDOR_KEY }, undefined, ac.signal);
    const reader = res.body!.getReader();
    await reader.read();
    ac.abort();
    const rec = call.received();
    await eventually(() => rec.interrupted === true, 'the vendor connection closing');
  });

  describe('x-gw-provider: genvendor_vertex', () => {
    const vertexHeaders = (project = 'my-project-1', location = 'us-central1') => ({
      'x-gw-provider': 'genvendor_vertex',
      'x-gw-vertex-project': project,
      'x-gw-vertex-location': location,
      'x-gw-provider-key': OAUTH_TOKEN,
    });

    it('sends the call to Vertex under the request project and location, with the OAuth token as bearer', async () => {
      const call = next();
      const reply = await client(vertexHeaders()).models.generateContent({ model: 'gemini-2.5-pro', contents: HISTORY });
      assert.equal(reply.candidates?.[0]?.content?.parts?.[1]?.thoughtSignature, THOUGHT_SIGNATURE);
      const rec = call.received();
      assert.equal(rec.url, '/v1/projects/my-project-1/locations/us-central1/publishers/google/models/gemini-2.5-pro:generateContent');
      assert.equal(rec.headers['authorization'], `Bearer ${OAUTH_TOKEN}`);
      assert.equal(rec.headers['x-goog-api-key'], undefined);
      assert.equal(rec.body.toString('utf8'), sentBodies.at(-1));
    });

    it('streams from Vertex with alt=sse', async () => {
      const call = next();
      let text = '';
      for await (const chunk of await client(vertexHeaders('my-project-1', 'global')).models.generateContentStream({ model: 'gemini-2.5-pro', contents: 'hi' })) text += chunk.text ?? '';
      assert.equal(text, 'Hello from the fake.');
      assert.equal(call.received().url, '/v1/projects/my-project-1/locations/global/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse');
    });

    it('refuses a project or location that is not one (no open proxy), before anything is sent', async () => {
      const before = fake.received.length;
      for (const headers of [vertexHeaders('my-project-1', 'evil.example.com#'), vertexHeaders('../../x', 'us-central1'), { ...vertexHeaders(), 'x-gw-vertex-project': '' }]) {
        const res = await raw('/genvendor/v1beta/models/gemini-2.5-pro:generateContent', { ...headers, 'x-goog-api-key': devKey });
        assert.equal(res.status, 400);
        assert.equal(res.headers.get('x-gw-error'), 'request_error');
        assert.equal(((await res.json()) as { error: { status: string } }).error.status, 'INVALID_ARGUMENT');
      }
      assert.equal(fake.received.length, before);
    });

    it('refuses a provider that does not serve generate-content', async () => {
      const res = await raw('/genvendor/v1beta/models/gemini-2.5-pro:generateContent', { 'x-goog-api-key': devKey, 'x-gw-provider': 'openai', 'x-gw-provider-key': VENDOR_KEY });
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('x-gw-error'), 'request_error');
    });
  });
});

describe('generate-content request deadline', () => {
  let fake: FakeVendor;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('gen-deadline');

  before(async () => {
    fake = await startFakeGemini();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_GENVENDOR: fake.origin, GW_REQUEST_DEADLINE_S: '0.3' } });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  it('answers 504 gateway_timeout as DEADLINE_EXCEEDED when nothing was sent in time', async () => {
    const res = await fetch(`${gw.url}/genvendor/v1beta/models/slow_1500:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': devKey, 'x-gw-provider-key': VENDOR_KEY },
      body: '{"contents":[]}',
    });
    assert.equal(res.status, 504);
    assert.equal(res.headers.get('x-gw-error'), 'gateway_timeout');
    const body = (await res.json()) as { error: { code: number; status: string; type: string } };
    assert.deepEqual([body.error.code, body.error.status, body.error.type], [504, 'DEADLINE_EXCEEDED', 'gateway_timeout']);
  });
});

describe('generate-content on Vertex with a stored key', () => {
  let fake: FakeVendor;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('gen-stored');

  before(async () => {
    fake = await startFakeGemini();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_GENVENDOR_VERTEX: fake.origin } });
    const res = await fetch(`${gw.url}/api/v1/vendor_key/create`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${devKey}` },
      body: JSON.stringify({ provider: 'genvendor_vertex', api_key: OAUTH_TOKEN, project: 'stored-project', location: 'europe-west4' }),
    });
    assert.equal(res.status, 200, await res.text());
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  const call = (headers: Record<string, string>) =>
    fetch(`${gw.url}/genvendor/v1beta/models/gemini-2.5-pro:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': devKey, 'x-gw-provider': 'genvendor_vertex', ...headers },
      body: '{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}',
    });

  it("uses the stored key's project and location, and its token as bearer", async () => {
    const n = fake.received.length;
    const res = await call({});
    assert.equal(res.status, 200, await res.text());
    assert.equal(fake.received[n]?.url, '/v1/projects/stored-project/locations/europe-west4/publishers/google/models/gemini-2.5-pro:generateContent');
    assert.equal(fake.received[n]?.headers['authorization'], `Bearer ${OAUTH_TOKEN}`);
  });

  it('request headers override the stored location', async () => {
    const n = fake.received.length;
    assert.equal((await call({ 'x-gw-vertex-location': 'global' })).status, 200);
    assert.equal(fake.received[n]?.url, '/v1/projects/stored-project/locations/global/publishers/google/models/gemini-2.5-pro:generateContent');
  });
});
