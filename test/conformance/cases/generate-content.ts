import assert from 'node:assert/strict';
import { googleError, startFakeGemini } from '../../fakes/gemini.js';
import { sseData, type CallKind, type ConformanceCase } from '../harness.js';

const MODEL: Record<CallKind, string> = {
  ok: 'gemini-2.5-flash',
  stream: 'gemini-2.5-flash',
  vendor_error: 'error_429',
  truncated: 'truncated',
  stall: 'stall_stream',
  broken: 'break_stream',
};
const STREAMED: ReadonlySet<CallKind> = new Set(['stream', 'stall', 'broken']);

const VENDOR_KEY = 'AIzaSy-conformance';
const OAUTH_TOKEN = 'ya29.conformance';

/** `{error:{type}}` as a JSON body or as the stream's terminal `data:` event */
const errorType = (body: unknown): string | undefined => (body as { error?: { type?: string } } | undefined)?.error?.type;

/** One row per hosting: the developer API, or Vertex selected by `x-gw-provider`. */
function generateContentCase(name: string, extraHeaders: Record<string, string>, upstreamCredential: [string, string]): ConformanceCase {
  return {
    name,
    startFake: startFakeGemini,
    env: (fake) => ({ GW_UPSTREAM_GENVENDOR: fake.origin, GW_UPSTREAM_GENVENDOR_VERTEX: fake.origin }),
    call: (kind, devKey) => ({
      path: `/genvendor/v1beta/models/${MODEL[kind]}:${STREAMED.has(kind) ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
      headers: { 'content-type': 'application/json', 'x-goog-api-key': devKey, ...extraHeaders },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generationConfig: { thinkingConfig: { includeThoughts: true } } }),
    }),
    upstreamCredential,
    checkReply(reply) {
      assert.equal((reply as { candidates?: Array<{ finishReason?: string }> }).candidates?.[0]?.finishReason, 'STOP');
    },
    stream: {
      contentType: 'text/event-stream',
      complete: (text) => (sseData(text).at(-1) as { candidates?: Array<{ finishReason?: string }> } | undefined)?.candidates?.[0]?.finishReason === 'STOP',
      errorType: (text) => sseData(text).map(errorType).find((t) => t !== undefined),
    },
    vendorError: {
      status: 429,
      check(body) {
        assert.deepEqual(body, googleError(429, 'scripted 429'));
      },
    },
    errorType,
  };
}

export const genvendorCase = generateContentCase('genvendor (generate-content)', { 'x-gw-provider-key': VENDOR_KEY }, ['x-goog-api-key', VENDOR_KEY]);

export const vertexGenerateContentCase = generateContentCase(
  'genvendor_vertex (generate-content)',
  { 'x-gw-provider': 'genvendor_vertex', 'x-gw-vertex-project': 'conformance-1', 'x-gw-vertex-location': 'us-central1', 'x-gw-provider-key': OAUTH_TOKEN },
  ['authorization', `Bearer ${OAUTH_TOKEN}`],
);
