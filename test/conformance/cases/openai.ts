import assert from 'node:assert/strict';
import { startFakeOpenAI } from '../../fakes/openai.js';
import { chatCompletionsStream, sharedErrorType, type CallKind, type ConformanceCase } from '../harness.js';

const MODEL: Record<CallKind, string> = {
  ok: 'gpt-4o',
  stream: 'gpt-4o',
  vendor_error: 'error_429',
  truncated: 'truncated',
  stall: 'stall_stream',
  broken: 'break_stream',
};


export const openaiCase: ConformanceCase = {
  name: 'openai (chat-completions)',
  startFake: startFakeOpenAI,
  env: (fake) => ({ GW_UPSTREAM_OPENAI: fake.origin }),
  call: (kind, devKey) => ({
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${devKey}`, 'x-gw-provider-key': 'sk-conformance' },
    body: JSON.stringify({ model: MODEL[kind], messages: [{ role: 'user', content: 'hi' }], ...(kind === 'stream' || kind === 'stall' || kind === 'broken' ? { stream: true } : {}) }),
  }),
  upstreamCredential: ['authorization', 'Bearer sk-conformance'],
  checkReply(reply) {
    assert.equal((reply as { object?: string }).object, 'chat.completion');
  },
  stream: chatCompletionsStream,
  vendorError: {
    status: 429,
    check(body) {
      assert.deepEqual(body, { error: { message: 'scripted 429', type: 'rate_limit_exceeded', param: null, code: null } });
    },
  },
  errorType: sharedErrorType,
};
