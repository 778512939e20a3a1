import assert from 'node:assert/strict';
import { startFakeAnthropic } from '../../fakes/anthropic.js';
import { startFakeBedrock } from '../../fakes/bedrock.js';
import { startFakeGemini } from '../../fakes/gemini.js';
import type { FakeVendor } from '../../fakes/server.js';
import { chatCompletionsStream, sharedErrorType, type CallKind, type ConformanceCase } from '../harness.js';

/**
 * The translated pairs: a chat-completions caller asks for another vendor's
 * catalog model, the gateway translates the call to that vendor's format and
 * the reply back. The fake is scripted by a suffix on the catalog name, which
 * still resolves to the model's provider; every expectation is what a
 * chat-completions caller sees.
 */
const SUFFIX: Record<CallKind, string> = {
  ok: '',
  stream: '',
  vendor_error: '-error_429',
  truncated: '-truncated',
  stall: '-stall_stream',
  broken: '-break_stream',
};
const STREAMED: ReadonlySet<CallKind> = new Set(['stream', 'stall', 'broken']);

interface Pair {
  name: string;
  model: string;
  startFake(): Promise<FakeVendor>;
  upstreamEnv: string;
  vendorKey: string;
  upstreamCredential: [string, string];
  /** the vendor-format request the `ok` call must become, byte for byte */
  upstreamBody: string;
  /** the vendor's 429 in the OpenAI envelope */
  vendorError: unknown;
}

function translatedCase(pair: Pair): ConformanceCase {
  return {
    name: pair.name,
    startFake: pair.startFake,
    env: (fake) => ({ [pair.upstreamEnv]: fake.origin }),
    call: (kind, devKey) => ({
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${devKey}`, 'x-gw-provider-key': pair.vendorKey },
      body: JSON.stringify({ model: pair.model + SUFFIX[kind], messages: [{ role: 'user', content: 'hi' }], ...(STREAMED.has(kind) ? { stream: true } : {}) }),
    }),
    upstreamBody: () => Buffer.from(pair.upstreamBody),
    upstreamCredential: pair.upstreamCredential,
    checkReply(reply) {
      const r = reply as { object?: string; model?: string; choices?: Array<{ message?: { content?: string }; finish_reason?: string }> };
      assert.equal(r.object, 'chat.completion');
      assert.equal(r.model, pair.model);
      assert.equal(r.choices?.[0]?.message?.content, 'Hello from the fake.');
      assert.equal(r.choices?.[0]?.finish_reason, 'stop');
    },
    stream: chatCompletionsStream,
    vendorError: {
      status: 429,
      check(body) {
        assert.deepEqual(body, pair.vendorError);
      },
    },
    errorType: sharedErrorType,
  };
}

export const chatToMessagesCase = translatedCase({
  name: 'chat-completions → msgvendor (messages)',
  model: 'claude-sonnet-4-5',
  startFake: startFakeAnthropic,
  upstreamEnv: 'GW_UPSTREAM_MSGVENDOR',
  vendorKey: 'sk-ant-conformance',
  upstreamCredential: ['x-api-key', 'sk-ant-conformance'],
  upstreamBody: '{"model":"claude-sonnet-4-5","max_tokens":64000,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}',
  vendorError: { error: { message: 'scripted 429', type: 'rate_limit_error', param: null, code: null } },
});

const BEDROCK_KEY = 'ABSK-conformance-api-key';
export const chatToConverseCase = translatedCase({
  name: 'chat-completions → cloudy (converse)',
  model: 'anthropic.claude-3-5-sonnet-20240620-v1:0',
  startFake: () => startFakeBedrock(),
  upstreamEnv: 'GW_UPSTREAM_CLOUDY',
  vendorKey: BEDROCK_KEY,
  upstreamCredential: ['authorization', `Bearer ${BEDROCK_KEY}`],
  upstreamBody: '{"messages":[{"role":"user","content":[{"text":"hi"}]}]}',
  vendorError: { error: { message: 'scripted 429', type: 'rate_limit_error', param: null, code: 'ThrottlingException' } },
});

export const chatToGenerateContentCase = translatedCase({
  name: 'chat-completions → genvendor (generate-content)',
  model: 'gemini-2.5-flash',
  startFake: startFakeGemini,
  upstreamEnv: 'GW_UPSTREAM_GENVENDOR',
  vendorKey: 'AIzaSy-conformance',
  upstreamCredential: ['x-goog-api-key', 'AIzaSy-conformance'],
  upstreamBody: '{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}',
  vendorError: { error: { message: 'scripted 429', type: 'rate_limit_error', param: null, code: 'RESOURCE_EXHAUSTED' } },
});
