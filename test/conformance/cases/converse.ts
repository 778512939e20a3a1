import assert from 'node:assert/strict';
import { startFakeBedrock } from '../../fakes/bedrock.js';
import type { CallKind, ConformanceCase } from '../harness.js';

const MODEL: Record<CallKind, string> = {
  ok: 'anthropic.claude-3-5-sonnet-20240620-v1:0',
  stream: 'anthropic.claude-3-5-sonnet-20240620-v1:0',
  vendor_error: 'error_429',
  truncated: 'truncated',
  stall: 'stall_stream',
  broken: 'break_stream',
};
const STREAMED: ReadonlySet<CallKind> = new Set(['stream', 'stall', 'broken']);
const API_KEY = 'ABSK-conformance-api-key';
const BODY = JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'hi' }] }] });

/**
 * The stream is binary event-stream frames read here as text: frame headers
 * and JSON payloads are ASCII, so names and the exception payload survive decoding.
 */
function exceptionType(text: string): string | undefined {
  const at = text.lastIndexOf(':exception-type');
  return at === -1 ? undefined : /"type":"([a-z_]+)"/.exec(text.slice(at))?.[1];
}

export const cloudyCase: ConformanceCase = {
  name: 'cloudy (converse, API key)',
  startFake: () => startFakeBedrock(),
  env: (fake) => ({ GW_UPSTREAM_CLOUDY: fake.origin }),
  call: (kind, devKey) => ({
    path: `/cloudy/model/${encodeURIComponent(MODEL[kind])}/${STREAMED.has(kind) ? 'converse-stream' : 'converse'}`,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${devKey}`, 'x-gw-provider-key': API_KEY },
    body: BODY,
  }),
  // the one legitimate rewrite: the path's modelId placed in a body that has none
  upstreamBody: (sent) => Buffer.from(`{"modelId":${JSON.stringify(MODEL.ok)},${sent.toString('utf8').slice(1)}`),
  upstreamCredential: ['authorization', `Bearer ${API_KEY}`],
  checkReply(reply) {
    assert.equal((reply as { output?: { message?: { role?: string } } }).output?.message?.role, 'assistant');
  },
  stream: {
    contentType: 'application/vnd.amazon.eventstream',
    complete: (text) => text.includes('messageStop') && text.includes('"usage":'),
    errorType: exceptionType,
  },
  vendorError: {
    status: 429,
    check(body) {
      assert.deepEqual(body, { message: 'scripted 429' });
    },
  },
  errorType: (body) => (body as { error?: { type?: string } } | undefined)?.error?.type,
};
