import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai.js';
import { ADMIN_KEY, oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually, freePort } from '../helpers/wait.js';

const PASS_THROUGH = { 'x-gw-provider-key': 'sk-errors-test' };

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

async function call(gw: TestGateway, path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}): Promise<Answer> {
  const res = await fetch(`${gw.url}${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { 'content-type': 'application/json', ...init.headers },
    body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

const chat = (model: string, extra: Record<string, unknown> = {}) => ({ model, messages: [{ role: 'user', content: 'hi' }], ...extra });

/** a gateway error: status, the shared envelope with its type, and x-gw-error naming it */
function assertGatewayError(a: Answer, status: number, type: string): void {
  assert.equal(a.status, status, a.text);
  assert.equal(a.headers.get('x-gw-error'), type);
  const err = (a.json as { error?: { type?: string; code?: number; message?: unknown } }).error;
  assert.equal(err?.type, type);
  assert.equal(err?.code, status);
  assert.equal(typeof err?.message, 'string');
  assert.ok(a.headers.get('x-gw-request-id'));
}

/** SSE `data:` payloads of a stream body */
const events = (text: string): string[] =>
  text
    .split(/\r?\n\r?\n/)
    .map((e) => e.replace(/^data: ?/, ''))
    .filter(Boolean);

describe('authentication and the error contract on chat-completions', () => {
  let fake: FakeOpenAI;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('errs');

  before(async () => {
    fake = await startFakeOpenAI();
    gw = await startTestGateway({
      bootstrap,
      env: { GW_UPSTREAM_OPENAI: fake.origin, GW_REQUEST_DEADLINE_S: '0.4', GW_STREAM_IDLE_S: '0.3' },
    });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  describe('developer key carriers', () => {
    it('x-gw-key and Authorization: Bearer gw_… both authenticate', async () => {
      const carriers: Array<Record<string, string>> = [{ 'x-gw-key': devKey }, { authorization: `Bearer ${devKey}` }, { authorization: `bearer ${devKey}` }];
      for (const headers of carriers) {
        const a = await call(gw, '/v1/chat/completions', { headers: { ...headers, ...PASS_THROUGH }, body: chat('gpt-4o') });
        assert.equal(a.status, 200, `${JSON.stringify(Object.keys(headers))}: ${a.text}`);
      }
    });

    it('a gw_ key on a carrier this surface does not read is no key', async () => {
      const a = await call(gw, '/v1/chat/completions', { headers: { 'x-api-key': devKey, ...PASS_THROUGH }, body: chat('gpt-4o') });
      assertGatewayError(a, 401, 'invalid_developer_key');
    });

    it('missing, unknown and malformed keys are 401 invalid_developer_key, with no anonymous fallback', async () => {
      const before = fake.received.length;
      const wrong: Array<Record<string, string>> = [{}, { 'x-gw-key': 'gw_' + 'x'.repeat(40) }, { authorization: 'Bearer gw_short' }, { 'x-gw-key': 'not-a-gw-key' }, { authorization: devKey }];
      for (const headers of wrong) {
        const a = await call(gw, '/v1/chat/completions', { headers: { ...headers, ...PASS_THROUGH }, body: chat('gpt-4o') });
        assertGatewayError(a, 401, 'invalid_developer_key');
      }
      assert.equal(fake.received.length, before, 'an unauthenticated call reached the vendor');
    });

    it('a revoked key fails from the next request on; an expired key fails too', async () => {
      const admin = { authorization: `Bearer ${ADMIN_KEY}` };
      const created = await call(gw, '/api/v1/admin/dev_keys', { headers: admin, body: { org_id: 'errs' } });
      assert.equal(created.status, 201, created.text);
      const { key_id, api_key } = created.json as { key_id: string; api_key: string };
      assert.equal((await call(gw, '/v1/chat/completions', { headers: { 'x-gw-key': api_key, ...PASS_THROUGH }, body: chat('gpt-4o') })).status, 200);
      const revoked = await call(gw, '/api/v1/admin/dev_keys/revoke', { headers: admin, body: { key_id } });
      assert.equal(revoked.status, 200, revoked.text);
      assertGatewayError(await call(gw, '/v1/chat/completions', { headers: { 'x-gw-key': api_key, ...PASS_THROUGH }, body: chat('gpt-4o') }), 401, 'invalid_developer_key');

      const expired = await call(gw, '/api/v1/admin/dev_keys', { headers: admin, body: { org_id: 'errs', expires_at: new Date(Date.now() - 1000).toISOString() } });
      assert.equal(expired.status, 201, expired.text);
      const old = (expired.json as { api_key: string }).api_key;
      assertGatewayError(await call(gw, '/v1/chat/completions', { headers: { authorization: `Bearer ${old}`, ...PASS_THROUGH }, body: chat('gpt-4o') }), 401, 'invalid_developer_key');
    });
  });

  describe('errors the gateway originates', () => {
    it('no provider credential is 402 onboarding_incomplete', async () => {
      assertGatewayError(await call(gw, '/v1/chat/completions', { headers: { 'x-gw-key': devKey }, body: chat('gpt-4o') }), 402, 'onboarding_incomplete');
    });

    it('a body that is not JSON, or has no model, is 400 request_error', async () => {
      assertGatewayError(await call(gw, '/v1/chat/completions', { headers: { 'x-gw-key': devKey, ...PASS_THROUGH }, body: '{"model":' }), 400, 'request_error');
      assertGatewayError(await call(gw, '/v1/chat/completions', { headers: { 'x-gw-key': devKey, ...PASS_THROUGH }, body: { messages: [] } }), 400, 'request_error');
    });

    it('a 2xx reply that does not parse is 502 upstream_truncated, never a 200', async () => {
      assertGatewayError(await call(gw, '/v1/chat/completions', { headers: { 'x-gw-key': devKey, ...PASS_THROUGH }, body: chat('truncated') }), 502, 'upstream_truncated');
    });

    it('a handler that has not answered within GW_REQUEST_DEADLINE_S is 504 gateway_timeout naming the running stage', async () => {
      const a = await call(gw, '/v1/chat/completions', { headers: { 'x-gw-key': devKey, ...PASS_THROUGH }, body: chat('slow_1500') });
      assertGatewayError(a, 504, 'gateway_timeout');
      assert.match(a.headers.get('x-gw-stage-durations') ?? '', /auth;dur=[\d.]+.*upstream_openai;dur=[\d.]+;running/);
    });

    it('unknown paths are 404 and wrong methods 405, both in the envelope with a request id', async () => {
      assertGatewayError(await call(gw, '/v1/nothing-here'), 404, 'not_found');
      const a = await call(gw, '/v1/chat/completions', { method: 'DELETE' });
      assertGatewayError(a, 405, 'method_not_allowed');
      assert.match(a.headers.get('allow') ?? '', /POST/);
    });
  });

  describe('vendor errors are relayed as sent, without x-gw-error', () => {
    for (const status of [429, 401, 400, 500]) {
      it(`a vendor ${status} comes back byte for byte`, async () => {
        const a = await call(gw, '/v1/chat/completions', { headers: { 'x-gw-key': devKey, ...PASS_THROUGH }, body: chat(`error_${status}`) });
        assert.equal(a.status, status);
        assert.equal(a.headers.get('x-gw-error'), null);
        assert.ok(a.headers.get('x-gw-request-id'));
        const vendorBody = JSON.stringify({
          error: { message: `scripted ${status}`, type: status === 429 ? 'rate_limit_exceeded' : 'invalid_request_error', param: null, code: status === 401 ? 'invalid_api_key' : null },
        });
        assert.equal(a.text, vendorBody);
        if (status === 429) assert.equal(a.headers.get('retry-after'), '7');
      });
    }

    it('the openai SDK sees the vendor 429 as a RateLimitError with its retry-after', async () => {
      const client = new OpenAI({ apiKey: devKey, baseURL: `${gw.url}/v1`, defaultHeaders: PASS_THROUGH, maxRetries: 0 });
      await assert.rejects(client.chat.completions.create({ model: 'error_429', messages: [{ role: 'user', content: 'hi' }] }), (err: unknown) => {
        assert.ok(err instanceof OpenAI.RateLimitError);
        assert.equal(err.headers.get('retry-after'), '7');
        assert.equal(err.headers.get('x-gw-error'), null);
        return true;
      });
    });
  });

  describe('streams end visibly', () => {
    it('a stream silent for GW_STREAM_IDLE_S ends with one terminal gateway_timeout event', async () => {
      const a = await call(gw, '/v1/chat/completions', { headers: { 'x-gw-key': devKey, ...PASS_THROUGH }, body: chat('stall_stream', { stream: true }) });
      assert.equal(a.status, 200);
      const evs = events(a.text);
      const errors = evs.filter((e) => e.includes('"error"'));
      assert.equal(errors.length, 1, a.text);
      assert.equal(evs.at(-1), errors[0], 'the error event is the last one');
      assert.equal((JSON.parse(errors[0] as string) as { error: { type: string } }).error.type, 'gateway_timeout');
      assert.equal(a.text.includes('[DONE]'), false);
    });

    it('an upstream that breaks mid-stream yields an error event, never a clean end', async () => {
      const a = await call(gw, '/v1/chat/completions', { headers: { 'x-gw-key': devKey, ...PASS_THROUGH }, body: chat('break_stream', { stream: true }) });
      assert.equal(a.status, 200);
      const evs = events(a.text);
      assert.ok(evs.some((e) => e.includes('"Hello"')), 'the chunks before the break were relayed');
      const last = JSON.parse(evs.at(-1) as string) as { error?: { type?: string } };
      assert.ok(last.error?.type, `last event is not an error: ${evs.at(-1)}`);
      assert.equal(a.text.includes('[DONE]'), false);
    });

    it('the openai SDK surfaces the broken stream as an error, not as a finished reply', async () => {
      const client = new OpenAI({ apiKey: devKey, baseURL: `${gw.url}/v1`, defaultHeaders: PASS_THROUGH, maxRetries: 0 });
      const stream = await client.chat.completions.create({ model: 'break_stream', stream: true, messages: [{ role: 'user', content: 'hi' }] });
      await assert.rejects(async () => {
        for await (const _ of stream) void _;
      });
    });
  });

  describe('x-gw-request-id', () => {
    it('is on every answer: success, gateway error, vendor error, 404, health', async () => {
      const answers = [
        await call(gw, '/v1/chat/completions', { headers: { 'x-gw-key': devKey, ...PASS_THROUGH }, body: chat('gpt-4o') }),
        await call(gw, '/v1/chat/completions', { body: chat('gpt-4o') }),
        await call(gw, '/v1/chat/completions', { headers: { 'x-gw-key': devKey, ...PASS_THROUGH }, body: chat('error_429') }),
        await call(gw, '/nope'),
        await call(gw, '/healthz'),
      ];
      const ids = answers.map((a) => a.headers.get('x-gw-request-id'));
      for (const id of ids) assert.match(id ?? '', /^[0-9a-f-]{36}$/);
      assert.equal(new Set(ids).size, ids.length, 'ids repeat');
    });

    it("is the caller's x-request-id when one is sent and safe", async () => {
      const a = await call(gw, '/v1/chat/completions', { headers: { 'x-gw-key': devKey, 'x-request-id': 'caller-id-123', ...PASS_THROUGH }, body: chat('gpt-4o') });
      assert.equal(a.headers.get('x-gw-request-id'), 'caller-id-123');
      const e = await call(gw, '/v1/chat/completions', { headers: { 'x-request-id': 'caller-id-456' }, body: chat('gpt-4o') });
      assert.equal(e.headers.get('x-gw-request-id'), 'caller-id-456');
      const bad = await call(gw, '/healthz', { headers: { 'x-request-id': 'has spaces and "quotes"' } });
      assert.notEqual(bad.headers.get('x-gw-request-id'), 'has spaces and "quotes"');
    });
  });
});

describe('a stream open longer than GW_STREAM_DEADLINE_S', () => {
  let fake: FakeOpenAI;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('deadline');

  before(async () => {
    fake = await startFakeOpenAI();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin, GW_STREAM_DEADLINE_S: '0.6', GW_STREAM_IDLE_S: '5' } });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  it('ends, though never idle, with one terminal gateway_timeout event and the upstream call cancelled', async () => {
    const before = fake.received.length;
    const a = await call(gw, '/v1/chat/completions', { headers: { 'x-gw-key': devKey, ...PASS_THROUGH }, body: chat('trickle_stream', { stream: true }) });
    assert.equal(a.status, 200);
    assert.equal(a.headers.get('x-gw-error'), null, 'a mid-stream error carries no header');
    const evs = events(a.text);
    assert.ok(evs.filter((e) => e.includes('"content":"."')).length >= 2, 'the trickle was relayed until the deadline');
    const last = JSON.parse(evs.at(-1) as string) as { error?: { type?: string; message?: string } };
    assert.equal(last.error?.type, 'gateway_timeout');
    assert.match(last.error?.message ?? '', /longer than 0.6 s/);
    await eventually(() => fake.received[before]?.interrupted === true, 'the upstream call was cancelled');
  });
});

describe('an unreachable upstream', () => {
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('down');

  before(async () => {
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_OPENAI: `http://127.0.0.1:${await freePort()}` } });
  });
  after(async () => {
    await gw.close();
  });

  it('is a 502 the engine raises about the upstream: no x-gw-error', async () => {
    const a = await call(gw, '/v1/chat/completions', { headers: { 'x-gw-key': devKey, ...PASS_THROUGH }, body: chat('gpt-4o') });
    assert.equal(a.status, 502, a.text);
    assert.equal(a.headers.get('x-gw-error'), null);
    assert.equal((a.json as { error?: { code?: number } }).error?.code, 502);
    assert.ok(a.headers.get('x-gw-request-id'));
  });
});
