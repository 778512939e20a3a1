import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { STREAM_CHUNKS, STREAM_EVENTS } from './fake-upstream.js';
import { BENCH_ADAPTER, BENCH_DEV_KEY, isGateway, type Target } from './targets.js';

/** One request shape the bench drives at every target, and how to tell its reply is right. */
export interface Scenario {
  id: 'json' | 'chat2k' | 'stream' | 'body32k' | 'messages-stream' | 'converse-stream' | 'execute' | 'selfhosted-adapter' | 'cache-hit' | 'shadow-2k' | 'pii-32k';
  title: string;
  /** the path on the gateway; nginx maps it to the vendor's path the way the gateway does */
  path: string;
  /** the vendor's path, which the direct target is called on */
  upstreamPath: string;
  headers: Record<string, string>;
  body: string;
  /**
   * What the direct and nginx targets are sent instead, when the gateway's
   * route takes another format than the vendor (/v1/execute): the same call
   * in the vendor's format, on its path, so the figures compare like with like.
   */
  vendorCall?: { path: string; body: string };
  /** streams: the wire-format family and how many events the upstream writes, each in its own read */
  stream?: { family: 'SSE' | 'event-stream'; events: number };
  /** a reason when this target's reply is not what this scenario expects */
  problem(body: Buffer, target: Target['id']): string | undefined;
  /** also measured on the `skills-off` target: the request skeleton's own cost on the relay's budget scenarios and the 2 KB chat body (what the guardrail stage adds) */
  skillsOff?: true;
  /** also measured on the `redis` target: what telemetry on Redis adds to a relayed request */
  onRedis?: true;
}

export const pathFor = (target: Target['id'], scenario: Scenario): string => (target === 'direct' ? scenario.upstreamPath : target === 'nginx' && scenario.vendorCall ? scenario.vendorCall.path : scenario.path);
export const bodyFor = (target: Target['id'], scenario: Scenario): string => (!isGateway(target) && scenario.vendorCall ? scenario.vendorCall.body : scenario.body);

const CHAT_PATH = '/v1/chat/completions';
/** the developer key on each surface's own carrier, the vendor key passed through on x-gw-provider-key */
const CHAT_HEADERS = { 'content-type': 'application/json', authorization: `Bearer ${BENCH_DEV_KEY}`, 'x-gw-provider-key': 'sk-bench-upstream' };
/** a self-hosted destination needs no provider key: only the developer key rides */
const SELFHOSTED_HEADERS = { 'content-type': 'application/json', authorization: `Bearer ${BENCH_DEV_KEY}` };
const MESSAGES_HEADERS = { 'content-type': 'application/json', 'x-api-key': BENCH_DEV_KEY, 'anthropic-version': '2023-06-01', 'x-gw-provider-key': 'sk-ant-bench-upstream' };
const CONVERSE_HEADERS = { 'content-type': 'application/json', authorization: `Bearer ${BENCH_DEV_KEY}`, 'x-gw-provider-key': 'bench-bedrock-api-key' };
/** as the Bedrock SDK sends it: the model id in the path, percent-encoded (`:` as %3A), not in the body */
const CONVERSE_MODEL_PATH = `/model/${encodeURIComponent('anthropic.claude-3-5-sonnet-20240620-v1:0')}/converse-stream`;

function paddedBody(bytes: number): string {
  const shell = (content: string) => JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content }] });
  const filler = 'The quick brown fox jumps over the lazy dog. ';
  const room = bytes - Buffer.byteLength(shell(''));
  const content = filler.repeat(Math.ceil(room / filler.length)).slice(0, room);
  return shell(content);
}

/** a chat body of about `bytes` whose user turn carries an e-mail address and a phone number every sentence or so */
function personalBody(bytes: number): string {
  const shell = (content: string) => JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content }] });
  const filler = 'Please write to jane.doe@example.com or call +1 415 555 0100 about the order. ';
  const room = bytes - Buffer.byteLength(shell(''));
  return shell(filler.repeat(Math.ceil(room / filler.length)).slice(0, room));
}

/** every per-key skill in shadow for one request (`x-gw-skills`) */
const ALL_SHADOW = ['semantic_cache', 'prompt_compaction', 'pii_redaction', 'model_routing', 'agent_trajectory_compaction'].map((s) => `${s}=shadow`).join(',');

const SMALL_CHAT = JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Say hello.' }] });

const isCompletion = (body: Buffer) => (body.includes('"object":"chat.completion"') ? undefined : `not a chat.completion: ${body.toString().slice(0, 160)}`);

const differs = (what: string, got: string[], want: string[]) => (got.join(',') === want.join(',') ? undefined : `${what}: expected ${want.join(' ')}, got ${got.join(' ')}`);

function sseEventNames(body: Buffer): string[] {
  return body
    .toString()
    .split('\n\n')
    .filter((e) => e.startsWith('event: '))
    .map((e) => e.slice('event: '.length, e.indexOf('\n')));
}

const codec = new EventStreamCodec(toUtf8, fromUtf8);

/** The :event-type of each frame; decoding checks both CRCs of every frame and throws on a bad one. */
function eventStreamTypes(body: Buffer): string[] {
  const types: string[] = [];
  for (let at = 0; at < body.length; ) {
    const total = body.readUInt32BE(at);
    const { headers } = codec.decode(body.subarray(at, at + total));
    if (headers[':message-type']?.value !== 'event') throw new Error(`frame ${types.length} is not an event: ${String(headers[':message-type']?.value)}`);
    types.push(String(headers[':event-type']?.value));
    at += total;
  }
  return types;
}

export const SCENARIOS: Scenario[] = [
  {
    id: 'json',
    skillsOff: true,
    onRedis: true,
    title: 'small JSON',
    path: CHAT_PATH,
    upstreamPath: CHAT_PATH,
    headers: CHAT_HEADERS,
    body: SMALL_CHAT,
    problem: isCompletion,
  },
  {
    // the same call as `json`, to a loaded LoRA adapter on a self-hosted destination: merit order, slot and adapter pin on top of the relay
    id: 'selfhosted-adapter',
    title: 'small JSON to a loaded self-hosted LoRA adapter',
    path: CHAT_PATH,
    upstreamPath: CHAT_PATH,
    headers: SELFHOSTED_HEADERS,
    body: JSON.stringify({ model: BENCH_ADAPTER, messages: [{ role: 'user', content: 'Say hello.' }] }),
    problem: isCompletion,
  },
  {
    // the guardrails' regex stage runs on the request path of every parsing surface; the classifier (shadow by default) beside the upstream call
    id: 'chat2k',
    skillsOff: true,
    title: '2 KB chat body (guardrails on the request path)',
    path: CHAT_PATH,
    upstreamPath: CHAT_PATH,
    headers: CHAT_HEADERS,
    body: paddedBody(2 * 1024),
    problem: isCompletion,
  },
  {
    id: 'stream',
    skillsOff: true,
    title: `${STREAM_CHUNKS}-chunk SSE stream`,
    path: CHAT_PATH,
    upstreamPath: CHAT_PATH,
    headers: CHAT_HEADERS,
    body: JSON.stringify({ model: 'gpt-4o', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Say hello.' }] }),
    stream: { family: 'SSE', events: STREAM_EVENTS.chat },
    problem(body) {
      const text = body.toString();
      const chunks = text.split('\n\n').filter((e) => e.startsWith('data: {')).length;
      if (chunks !== STREAM_CHUNKS + 1) return `expected ${STREAM_CHUNKS} chunks and a usage chunk, got ${chunks}: ${text.slice(0, 160)}`;
      return text.includes('data: [DONE]') ? undefined : 'no [DONE]';
    },
  },
  {
    id: 'body32k',
    skillsOff: true,
    title: '32 KB request body',
    path: CHAT_PATH,
    upstreamPath: CHAT_PATH,
    headers: CHAT_HEADERS,
    body: paddedBody(32 * 1024),
    problem: isCompletion,
  },
  {
    id: 'messages-stream',
    title: `messages SSE stream (${STREAM_EVENTS.messages.length} events)`,
    path: '/msgvendor/v1/messages',
    upstreamPath: '/v1/messages',
    headers: MESSAGES_HEADERS,
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 256, stream: true, messages: [{ role: 'user', content: 'Say hello.' }] }),
    stream: { family: 'SSE', events: STREAM_EVENTS.messages.length },
    problem: (body) => differs('messages events', sseEventNames(body), STREAM_EVENTS.messages),
  },
  {
    id: 'converse-stream',
    title: `ConverseStream event stream (${STREAM_EVENTS.converse.length} frames)`,
    path: `/cloudy${CONVERSE_MODEL_PATH}`,
    upstreamPath: CONVERSE_MODEL_PATH,
    headers: CONVERSE_HEADERS,
    body: JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'Say hello.' }] }], inferenceConfig: { maxTokens: 256 } }),
    stream: { family: 'event-stream', events: STREAM_EVENTS.converse.length },
    problem(body) {
      try {
        return differs('converse frames', eventStreamTypes(body), STREAM_EVENTS.converse);
      } catch (err) {
        return `not a valid event stream: ${(err as Error).message}`;
      }
    },
  },
  {
    id: 'execute',
    title: '/v1/execute, small JSON to an openai model',
    path: '/v1/execute',
    upstreamPath: CHAT_PATH,
    headers: CHAT_HEADERS,
    body: JSON.stringify({ input: { messages: [{ role: 'user', content: 'Say hello.' }] }, target: { model: 'gpt-4o' } }),
    vendorCall: { path: CHAT_PATH, body: SMALL_CHAT },
    problem: (body, target) => (!isGateway(target) ? isCompletion(body) : body.includes('"object":"execution"') ? undefined : `not an execution: ${body.toString().slice(0, 160)}`),
  },
  {
    // the first call fills the cache (in process: the bench gateway has no Redis); every later one is answered from it
    id: 'cache-hit',
    title: 'small JSON answered from the semantic cache',
    path: CHAT_PATH,
    upstreamPath: CHAT_PATH,
    headers: { ...CHAT_HEADERS, 'x-gw-skills': 'semantic_cache=prod' },
    body: SMALL_CHAT,
    problem: isCompletion,
  },
  {
    id: 'shadow-2k',
    title: '2 KB chat body, all five skills in shadow',
    path: CHAT_PATH,
    upstreamPath: CHAT_PATH,
    headers: { ...CHAT_HEADERS, 'x-gw-skills': ALL_SHADOW },
    body: paddedBody(2 * 1024),
    problem: isCompletion,
  },
  {
    id: 'pii-32k',
    title: '32 KB body with personal data, PII redaction acting',
    path: CHAT_PATH,
    upstreamPath: CHAT_PATH,
    headers: { ...CHAT_HEADERS, 'x-gw-skills': 'pii_redaction=prod' },
    body: personalBody(32 * 1024),
    problem: isCompletion,
  },
];
