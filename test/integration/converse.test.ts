import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
  ModelStreamErrorException,
  type ConverseStreamOutput,
  type Message as ConverseMessage,
} from '@aws-sdk/client-bedrock-runtime';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { HttpHandlerOptions } from '@smithy/types';
import type { HttpRequest } from '@smithy/protocol-http';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { converseStreamFrames, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.js';
import type { Recorded } from '../fakes/server.js';
import { oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually } from '../helpers/wait.js';

const API_KEY = 'ABSKQmVkcm9ja0FQSUtleS1mYWtlLWtleQ==';
const ACCESS_KEY_ID = 'AKIAFAKEGATEWAYTEST1';
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYFAKEKEY';
const MODEL = 'anthropic.claude-3-5-sonnet-20240620-v1:0';
const ARN = 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-7-sonnet-20250219-v1:0';
const IDLE_S = 0.5;
const codec = new EventStreamCodec(toUtf8, fromUtf8);

const messages: ConverseMessage[] = [{ role: 'user', content: [{ text: 'hi' }, { cachePoint: { type: 'default' } }] }];

/** Splits an event-stream body into decoded frames; decode() checks both CRCs. */
function frames(bytes: Buffer) {
  const out = [];
  for (let at = 0; at < bytes.length; ) {
    const len = bytes.readUInt32BE(at);
    out.push(codec.decode(bytes.subarray(at, at + len)));
    at += len;
  }
  return out;
}

/** NodeHttpHandler (HTTP/1.1: the gateway does not speak cleartext HTTP/2) that remembers the bodies the SDK sent. */
class RecordingHandler extends NodeHttpHandler {
  readonly bodies: string[] = [];
  override handle(request: HttpRequest, options?: HttpHandlerOptions) {
    const body: unknown = request.body;
    if (typeof body === 'string' || body instanceof Uint8Array) this.bodies.push(Buffer.from(body).toString('utf8'));
    return super.handle(request, options);
  }
}

describe('converse relay through @aws-sdk/client-bedrock-runtime', () => {
  let fake: FakeBedrock;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('conv');
  const handler = new RecordingHandler();

  before(async () => {
    fake = await startFakeBedrock({ [ACCESS_KEY_ID]: SECRET });
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_CLOUDY: fake.origin, GW_STREAM_IDLE_S: String(IDLE_S) } });
  });
  after(async () => {
    await gw.close();
    await fake.close();
    handler.destroy();
  });

  /** The SDK pointed at the gateway: developer key as the bearer token, extra headers for the vendor credential. */
  const client = (headers: Record<string, string> = { 'x-gw-provider-key': API_KEY }, token = devKey) => {
    const c = new BedrockRuntimeClient({
      region: 'us-east-1',
      endpoint: `${gw.url}/cloudy`,
      token: { token },
      authSchemePreference: ['httpBearerAuth'],
      requestHandler: handler,
      maxAttempts: 1,
    });
    c.middlewareStack.add(
      (next) => (args) => {
        Object.assign((args.request as HttpRequest).headers, headers);
        return next(args);
      },
      { step: 'build', name: 'gatewayHeaders' },
    );
    return c;
  };
  const next = (): (() => Recorded) => {
    const n = fake.received.length;
    return () => {
      const rec = fake.received[n];
      assert.ok(rec, 'the fake received the call');
      return rec;
    };
  };
  const raw = (path: string, headers: Record<string, string>, body: string, signal?: AbortSignal) =>
    fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${devKey}`, ...headers }, body, signal });

  it('relays Converse with the API key as bearer; modelId from the path is placed in the body, the rest as sent', async () => {
    const received = next();
    const reply = await client().send(new ConverseCommand({ modelId: MODEL, messages, inferenceConfig: { maxTokens: 64 } }));
    assert.equal(reply.output?.message?.content?.[1]?.text, 'Hello from the fake.');
    assert.equal(reply.output?.message?.content?.[0]?.reasoningContent?.reasoningText?.signature, 'fake-reasoning-signature');
    assert.deepEqual(reply.usage, { inputTokens: 12, outputTokens: 5, totalTokens: 17, cacheReadInputTokens: 2, cacheWriteInputTokens: 0 });
    const rec = received();
    assert.equal(rec.url, '/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse');
    assert.equal(rec.headers['authorization'], `Bearer ${API_KEY}`);
    const sent = handler.bodies.at(-1) ?? '';
    assert.equal(rec.body.toString('utf8'), `{"modelId":${JSON.stringify(MODEL)},${sent.slice(1)}`);
    assert.equal(Object.keys(rec.headers).some((h) => h.startsWith('x-gw-')), false);
    assert.equal(rec.rawHeaders.some((v) => v.includes(devKey)), false);
  });

  it('signs with SigV4 (service bedrock) from a packed access-key pair, in the requested region; the fake verifies it', async () => {
    const received = next();
    const checks = fake.signatures.length;
    await client({ 'x-gw-provider-key': `${ACCESS_KEY_ID}:${SECRET}`, 'x-gw-aws-region': 'eu-west-3' }).send(new ConverseCommand({ modelId: MODEL, messages }));
    const check = fake.signatures[checks];
    assert.ok(check);
    assert.equal(check.valid, true);
    assert.deepEqual([check.accessKeyId, check.region], [ACCESS_KEY_ID, 'eu-west-3']);
    assert.ok(check.signedHeaders.includes('host') && check.signedHeaders.includes('x-amz-date'));
    assert.equal(received().headers['x-amz-security-token'], undefined);
  });

  it('signs with a session token when the pair carries one', async () => {
    const received = next();
    const checks = fake.signatures.length;
    await client({ 'x-gw-provider-key': `${ACCESS_KEY_ID}:${SECRET}:FwoGZXIvYXdzEXAMPLETOKEN` }).send(new ConverseCommand({ modelId: MODEL, messages }));
    assert.equal(fake.signatures[checks]?.valid, true);
    assert.equal(fake.signatures[checks]?.region, 'us-east-1');
    assert.equal(received().headers['x-amz-security-token'], 'FwoGZXIvYXdzEXAMPLETOKEN');
  });

  it('a wrong secret fails the signature check at the vendor, and that 403 is relayed as the vendor said it', async () => {
    const res = await raw(`/cloudy/model/${encodeURIComponent(MODEL)}/converse`, { 'x-gw-provider-key': `${ACCESS_KEY_ID}:not-the-secret` }, JSON.stringify({ messages }));
    assert.equal(res.status, 403);
    assert.equal(res.headers.get('x-gw-error'), null);
    assert.match(res.headers.get('x-amzn-errortype') ?? '', /^InvalidSignatureException/);
  });

  it('streams ConverseStream frame by frame; the relayed bytes are the vendor bytes', async () => {
    const reply = await client().send(new ConverseStreamCommand({ modelId: MODEL, messages }));
    let text = '';
    let reasoning = '';
    let usage: unknown;
    for await (const event of reply.stream as AsyncIterable<ConverseStreamOutput>) {
      text += event.contentBlockDelta?.delta?.text ?? '';
      reasoning += event.contentBlockDelta?.delta?.reasoningContent?.text ?? '';
      usage ??= event.metadata?.usage;
    }
    assert.equal(text, 'Hello from the fake.');
    assert.equal(reasoning, 'Weighing a greeting.');
    assert.deepEqual(usage, { inputTokens: 12, outputTokens: 6, totalTokens: 18, cacheReadInputTokens: 3 });
    const res = await raw(`/cloudy/model/${encodeURIComponent(MODEL)}/converse-stream`, { 'x-gw-provider-key': API_KEY }, JSON.stringify({ messages }));
    assert.equal(res.headers.get('content-type'), 'application/vnd.amazon.eventstream');
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(Buffer.concat(converseStreamFrames())));
  });

  it("decodes an ARN's %2F and %3A from the path and sends it upstream encoded the SDK's way", async () => {
    const received = next();
    await client().send(new ConverseCommand({ modelId: ARN, messages }));
    const rec = received();
    assert.equal(rec.url, `/model/${encodeURIComponent(ARN)}/converse`);
    assert.ok(rec.url.includes('%2F') && rec.url.includes('%3A'));
    assert.equal((JSON.parse(rec.body.toString('utf8')) as { modelId: string }).modelId, ARN);
  });

  it('/cloudy/converse reads modelId from the body and relays the body byte for byte', async () => {
    const received = next();
    const body = `{ "modelId": ${JSON.stringify(MODEL)},\n  "messages": ${JSON.stringify(messages)} }`;
    const res = await raw('/cloudy/converse', { 'x-gw-provider-key': API_KEY }, body);
    assert.equal(res.status, 200);
    const rec = received();
    assert.equal(rec.url, '/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse');
    assert.equal(rec.body.toString('utf8'), body);
    const missing = await raw('/cloudy/converse-stream', { 'x-gw-provider-key': API_KEY }, JSON.stringify({ messages }));
    assert.equal(missing.status, 400);
    assert.equal(missing.headers.get('x-amzn-errortype'), 'ValidationException');
  });

  it('a body repeating the path modelId proceeds; one naming another id is a 400 ValidationException naming both', async () => {
    const path = `/cloudy/model/${encodeURIComponent(MODEL)}/converse`;
    const same = await raw(path, { 'x-gw-provider-key': API_KEY }, JSON.stringify({ modelId: MODEL, messages }));
    assert.equal(same.status, 200);
    const before = fake.received.length;
    const res = await raw(path, { 'x-gw-provider-key': API_KEY }, JSON.stringify({ modelId: 'amazon.nova-pro-v1:0', messages }));
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('x-gw-error'), 'request_error');
    assert.equal(res.headers.get('x-amzn-errortype'), 'ValidationException');
    const { message } = (await res.json()) as { message: string };
    assert.ok(message.includes(MODEL) && message.includes('amazon.nova-pro-v1:0'), message);
    assert.equal(fake.received.length, before);
  });

  it("never forwards a signature of the caller's own (x-amz-date, x-amz-security-token)", async () => {
    const received = next();
    const res = await raw(`/cloudy/model/${encodeURIComponent(MODEL)}/converse`, { 'x-gw-provider-key': API_KEY, 'x-amz-date': '20250101T000000Z', 'x-amz-security-token': 'caller-session-token' }, JSON.stringify({ messages }));
    assert.equal(res.status, 200);
    const rec = received();
    assert.equal(rec.headers['x-amz-security-token'], undefined);
    assert.equal(rec.headers['x-amz-date'], undefined);
  });

  it('refuses an API key sent beside an access-key pair (400 request_error)', async () => {
    const before = fake.received.length;
    const res = await raw(`/cloudy/model/${encodeURIComponent(MODEL)}/converse`, { authorization: `Bearer ${API_KEY}`, 'x-gw-key': devKey, 'x-gw-provider-key': `${ACCESS_KEY_ID}:${SECRET}` }, JSON.stringify({ messages }));
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('x-gw-error'), 'request_error');
    assert.equal(res.headers.get('x-amzn-errortype'), 'ValidationException');
    assert.equal(fake.received.length, before);
  });

  it('relays a vendor error as sent (no x-gw-error); the SDK raises the modeled exception', async () => {
    await assert.rejects(client().send(new ConverseCommand({ modelId: 'error_429', messages })), (err: Error) => err.name === 'ThrottlingException' && err.message === 'scripted 429');
    const res = await raw('/cloudy/model/error_400/converse', { 'x-gw-provider-key': API_KEY }, JSON.stringify({ messages }));
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('x-gw-error'), null);
    assert.deepEqual(await res.json(), { message: 'scripted 400' });
  });

  it("answers its own errors as AWS errors the SDK reads, with x-gw-error", async () => {
    await assert.rejects(client(undefined, 'gw_unknown').send(new ConverseCommand({ modelId: MODEL, messages })), (err: Error & { $metadata?: { httpStatusCode?: number } }) => {
      return err.name === 'UnrecognizedClientException' && err.$metadata?.httpStatusCode === 401;
    });
    await assert.rejects(client({}).send(new ConverseCommand({ modelId: MODEL, messages })), (err: Error) => err.name === 'AccessDeniedException' && err.message.includes('no cloudy credential'));
    const res = await raw('/cloudy/converse', { 'x-gw-provider-key': API_KEY, 'x-gw-aws-region': 'evil.example.com/x' }, JSON.stringify({ modelId: MODEL, messages }));
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('x-gw-error'), 'request_error');
  });

  it('converse errors carry the shared error object beside the top-level message and x-amzn-errortype', async () => {
    const res = await raw('/cloudy/converse', { 'x-gw-provider-key': API_KEY, authorization: 'Bearer gw_unknown' }, JSON.stringify({ modelId: MODEL, messages }));
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('x-amzn-errortype'), 'UnrecognizedClientException');
    const message = 'developer key missing, invalid, revoked or expired';
    assert.deepEqual(await res.json(), { message, error: { message, type: 'invalid_developer_key', code: 401 } });
  });

  it('turns a truncated 2xx body into 502 upstream_truncated', async () => {
    const res = await raw('/cloudy/model/truncated/converse', { 'x-gw-provider-key': API_KEY }, JSON.stringify({ messages }));
    assert.equal(res.status, 502);
    assert.equal(res.headers.get('x-gw-error'), 'upstream_truncated');
    assert.equal(res.headers.get('x-amzn-errortype'), 'InternalServerException');
    assert.equal(((await res.json()) as { error: { type: string } }).error.type, 'upstream_truncated');
  });

  it('closes an idle stream with one exception frame of type gateway_timeout (valid CRCs)', async () => {
    const started = Date.now();
    const res = await raw('/cloudy/model/stall_stream/converse-stream', { 'x-gw-provider-key': API_KEY }, JSON.stringify({ messages }));
    const all = frames(Buffer.from(await res.arrayBuffer()));
    assert.ok(Date.now() - started >= IDLE_S * 900);
    assert.equal(res.headers.get('x-gw-error'), null);
    assert.equal(all.length, 2);
    const last = all[1]!;
    assert.equal(last.headers[':message-type']?.value, 'exception');
    // a member ConverseStream models, so the SDK raises its typed exception
    assert.equal(last.headers[':exception-type']?.value, 'modelStreamErrorException');
    const payload = JSON.parse(toUtf8(last.body)) as { message: string; error: { message: string; type: string; code: number } };
    assert.equal(payload.error.type, 'gateway_timeout');
    assert.equal(payload.error.code, 504);
    assert.equal(payload.message, payload.error.message);
    const stream = await client().send(new ConverseStreamCommand({ modelId: 'stall_stream', messages }));
    await assert.rejects(
      (async () => {
        for await (const _ of stream.stream as AsyncIterable<unknown>) {
          // the first frame arrives, then silence
        }
      })(),
      (err: Error) => err instanceof ModelStreamErrorException && err.message.includes('stream silent'),
    );
  });

  it('ends a stream broken mid-way with an exception frame the SDK raises', async () => {
    const stream = await client().send(new ConverseStreamCommand({ modelId: 'break_stream', messages }));
    await assert.rejects(
      (async () => {
        for await (const _ of stream.stream as AsyncIterable<unknown>) {
          // two frames, then the vendor drops the connection
        }
      })(),
      (err: Error) => err.name === 'InternalServerException',
    );
  });

  it('cancels the upstream call when the client goes away', async () => {
    const received = next();
    const ac = new AbortController();
    const res = await raw('/cloudy/model/stall_stream/converse-stream', { 'x-gw-provider-key': API_KEY }, JSON.stringify({ messages }), ac.signal);
    await res.body!.getReader().read();
    ac.abort();
    const rec = received();
    await eventually(() => rec.interrupted === true, 'the vendor connection closing');
  });
});

describe('converse request deadline', () => {
  let fake: FakeBedrock;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('conv-deadline');

  before(async () => {
    fake = await startFakeBedrock();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_CLOUDY: fake.origin, GW_REQUEST_DEADLINE_S: '0.3' } });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  it('answers 504 gateway_timeout as ModelTimeoutException when nothing was sent in time', async () => {
    const c = new BedrockRuntimeClient({ region: 'us-east-1', endpoint: `${gw.url}/cloudy`, token: { token: devKey }, authSchemePreference: ['httpBearerAuth'], requestHandler: new NodeHttpHandler(), maxAttempts: 1 });
    c.middlewareStack.add(
      (next) => (args) => {
        (args.request as HttpRequest).headers['x-gw-provider-key'] = API_KEY;
        return next(args);
      },
      { step: 'build' },
    );
    await assert.rejects(c.send(new ConverseCommand({ modelId: 'slow_1500', messages })), (err: Error & { $metadata?: { httpStatusCode?: number }; $response?: { headers: Record<string, string> } }) => {
      return err.name === 'ModelTimeoutException' && err.$metadata?.httpStatusCode === 504 && err.$response?.headers['x-gw-error'] === 'gateway_timeout';
    });
    c.destroy();
    const res = await fetch(`${gw.url}/cloudy/model/slow_1500/converse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${devKey}`, 'x-gw-provider-key': API_KEY },
      body: JSON.stringify({ messages }),
    });
    assert.equal(res.headers.get('x-amzn-errortype'), 'ModelTimeoutException');
    const body = (await res.json()) as { message: string; error: { type: string; code: number; message: string } };
    assert.deepEqual([body.error.type, body.error.code, body.message], ['gateway_timeout', 504, body.error.message]);
  });
});

describe('converse with stored cloudy keys', () => {
  let fake: FakeBedrock;
  let gw: TestGateway;
  const pairOrg = oneTenant('conv-stored-pair');
  const keyOrg = oneTenant('conv-stored-key');

  before(async () => {
    fake = await startFakeBedrock({ [ACCESS_KEY_ID]: SECRET });
    gw = await startTestGateway({
      bootstrap: { orgs: [...pairOrg.bootstrap.orgs!, ...keyOrg.bootstrap.orgs!], dev_keys: [...pairOrg.bootstrap.dev_keys!, ...keyOrg.bootstrap.dev_keys!] },
      env: { GW_UPSTREAM_CLOUDY: fake.origin },
    });
    const store = async (devKey: string, body: Record<string, string>) => {
      const res = await fetch(`${gw.url}/api/v1/vendor_key/create`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${devKey}` }, body: JSON.stringify({ provider: 'cloudy', ...body }) });
      assert.equal(res.status, 200, await res.text());
    };
    await store(pairOrg.devKey, { api_key: `${ACCESS_KEY_ID}:${SECRET}`, region: 'eu-central-1' });
    await store(keyOrg.devKey, { api_key: API_KEY, credential_kind: 'api_key' });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  const converse = (devKey: string, headers: Record<string, string> = {}) =>
    fetch(`${gw.url}/cloudy/model/${encodeURIComponent(MODEL)}/converse`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${devKey}`, ...headers }, body: JSON.stringify({ messages }) });

  it("signs with the stored pair in the stored key's region", async () => {
    const checks = fake.signatures.length;
    const res = await converse(pairOrg.devKey);
    assert.equal(res.status, 200, await res.text());
    assert.equal(fake.signatures[checks]?.valid, true);
    assert.equal(fake.signatures[checks]?.region, 'eu-central-1');
  });

  it('x-gw-aws-region overrides the stored region', async () => {
    const checks = fake.signatures.length;
    assert.equal((await converse(pairOrg.devKey, { 'x-gw-aws-region': 'ap-southeast-2' })).status, 200);
    assert.equal(fake.signatures[checks]?.region, 'ap-southeast-2');
  });

  it('sends a stored API key (credential_kind api_key) as the bearer', async () => {
    const n = fake.received.length;
    assert.equal((await converse(keyOrg.devKey)).status, 200);
    assert.equal(fake.received[n]?.headers['authorization'], `Bearer ${API_KEY}`);
  });
});
