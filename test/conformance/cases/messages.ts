import assert from 'node:assert/strict';
import { startFakeAnthropic } from '../../fakes/anthropic.js';
import { sseData, type CallKind, type ConformanceCase } from '../harness.js';

const MODEL: Record<CallKind, string> = {
  ok: 'claude-sonnet-4-5',
  stream: 'claude-sonnet-4-5',
  vendor_error: 'error_429',
  truncated: 'truncated',
  stall: 'stall_stream',
  broken: 'break_stream',
};

/** `{type:"error", error:{type}}` as a body, or the stream's `event: error` */
const messagesErrorType = (body: unknown): string | undefined => {
  const b = body as { type?: string; error?: { type?: string } } | undefined;
  return b?.type === 'error' ? b.error?.type : undefined;
};

const messagesStream = {
  contentType: 'text/event-stream',
  complete: (text: string) => text.includes('event: message_stop'),
  errorType: (text: string) => sseData(text).map(messagesErrorType).find((t) => t !== undefined),
};

const vendorError = {
  status: 429,
  check(body: unknown) {
    assert.deepEqual(body, { type: 'error', error: { type: 'rate_limit_error', message: 'scripted 429' }, request_id: 'req_fake_error' });
  },
};

const messagesBody = (kind: CallKind) =>
  JSON.stringify({
    model: MODEL[kind],
    max_tokens: 64,
    thinking: { type: 'enabled', budget_tokens: 1024 },
    messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] }],
    ...(kind === 'stream' || kind === 'stall' || kind === 'broken' ? { stream: true } : {}),
  });

const checkReply = (reply: unknown) => {
  assert.equal((reply as { type?: string }).type, 'message');
};

/** Anthropic through /msgvendor/v1/messages with the developer key on x-api-key. */
export const msgvendorCase: ConformanceCase = {
  name: 'msgvendor (messages)',
  startFake: startFakeAnthropic,
  env: (fake) => ({ GW_UPSTREAM_MSGVENDOR: fake.origin }),
  call: (kind, devKey) => ({
    path: '/msgvendor/v1/messages',
    headers: { 'content-type': 'application/json', 'x-api-key': devKey, 'anthropic-version': '2023-06-01', 'x-gw-provider-key': 'sk-ant-conformance' },
    body: messagesBody(kind),
  }),
  upstreamCredential: ['x-api-key', 'sk-ant-conformance'],
  checkReply,
  stream: messagesStream,
  vendorError,
  errorType: messagesErrorType,
};

/** Claude on Vertex: the same messages call with `x-gw-provider: genvendor_vertex`, served by rawPredict. */
export const vertexMessagesCase: ConformanceCase = {
  name: 'genvendor_vertex (messages)',
  startFake: startFakeAnthropic,
  env: (fake) => ({ GW_UPSTREAM_GENVENDOR_VERTEX: fake.origin }),
  call: (kind, devKey) => ({
    path: '/msgvendor/v1/messages',
    headers: {
      'content-type': 'application/json',
      'x-api-key': devKey,
      'anthropic-version': '2023-06-01',
      'x-gw-provider': 'genvendor_vertex',
      'x-gw-vertex-project': 'conformance-project',
      'x-gw-vertex-location': 'us-east5',
      'x-gw-provider-key': 'ya29.vertex-conformance',
    },
    body: messagesBody(kind),
  }),
  upstreamBody(sent) {
    const { model: _model, ...rest } = JSON.parse(sent.toString('utf8')) as Record<string, unknown>;
    return Buffer.from(JSON.stringify({ ...rest, anthropic_version: 'vertex-2023-10-16' }));
  },
  upstreamCredential: ['authorization', 'Bearer ya29.vertex-conformance'],
  checkReply,
  stream: messagesStream,
  vendorError,
  errorType: messagesErrorType,
};
