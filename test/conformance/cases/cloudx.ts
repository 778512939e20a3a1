import assert from 'node:assert/strict';
import { startFakeAzure } from '../../fakes/azure.js';
import { chatCompletionsStream, sharedErrorType, sseData, type CallKind, type ConformanceCase } from '../harness.js';

const DEPLOYMENT: Record<CallKind, string> = {
  ok: 'gpt-4o-prod',
  stream: 'gpt-4o-prod',
  vendor_error: 'error_429',
  truncated: 'truncated',
  stall: 'stall_stream',
  broken: 'break_stream',
};

const streaming = (kind: CallKind) => kind === 'stream' || kind === 'stall' || kind === 'broken';

/** Azure OpenAI through /cloudx/compat/openai/deployments/{deployment}/chat/completions with the key on api-key. */
export const cloudxCase: ConformanceCase = {
  name: 'cloudx (deployments chat-completions)',
  startFake: startFakeAzure,
  env: (fake) => ({ GW_UPSTREAM_CLOUDX: fake.origin }),
  call: (kind, devKey) => ({
    path: `/cloudx/compat/openai/deployments/${DEPLOYMENT[kind]}/chat/completions?api-version=2024-10-21`,
    headers: { 'content-type': 'application/json', 'api-key': devKey, 'x-gw-provider-key': 'azure-conformance-key' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], ...(streaming(kind) ? { stream: true } : {}) }),
  }),
  upstreamCredential: ['api-key', 'azure-conformance-key'],
  checkReply(reply) {
    assert.equal((reply as { object?: string }).object, 'chat.completion');
  },
  stream: chatCompletionsStream,
  vendorError: {
    status: 429,
    check(body) {
      assert.deepEqual(body, { error: { code: '429', message: 'scripted 429' } });
    },
  },
  errorType: sharedErrorType,
};

const responsesErrorType = (text: string): string | undefined => {
  const ev = sseData(text).find((e) => e['type'] === 'error');
  return ev === undefined ? undefined : String(ev['code']);
};

/** The Responses API on Azure through /cloudx/compat/v1/responses (deployment as model). */
export const cloudxResponsesCase: ConformanceCase = {
  name: 'cloudx (responses)',
  startFake: startFakeAzure,
  env: (fake) => ({ GW_UPSTREAM_CLOUDX: fake.origin }),
  call: (kind, devKey) => ({
    path: '/cloudx/compat/v1/responses?api-version=preview',
    headers: { 'content-type': 'application/json', 'api-key': devKey, 'x-gw-provider-key': 'azure-conformance-key' },
    body: JSON.stringify({ model: DEPLOYMENT[kind], input: [{ role: 'user', content: 'hi' }], store: false, include: ['reasoning.encrypted_content'], ...(streaming(kind) ? { stream: true } : {}) }),
  }),
  upstreamCredential: ['api-key', 'azure-conformance-key'],
  checkReply(reply) {
    assert.equal((reply as { object?: string }).object, 'response');
  },
  stream: {
    contentType: 'text/event-stream',
    complete: (text) => text.includes('event: response.completed'),
    errorType: responsesErrorType,
  },
  vendorError: {
    status: 429,
    check(body) {
      assert.deepEqual(body, { error: { code: '429', message: 'scripted 429' } });
    },
  },
  errorType: sharedErrorType,
};
