import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import type { EchoVendor } from '../fakes/echo.js';
import type { FakeVendor } from '../fakes/server.js';
import type { TestGateway } from './gateway.js';
import { eventually } from './wait.js';

/**
 * Every surface that parses a body, for the skills' integration tests: how
 * to call it with one user turn (whole or streamed) and how to read the
 * reply's text back, each in its own vendor format. Every upstream is one
 * fake (the echo vendor): `echoEnv` points each provider at it.
 */

export const BEDROCK_MODEL = 'anthropic.claude-3-5-sonnet-20240620-v1:0';

type Json = Record<string, unknown>;

/** How one call is made: streamed or whole, with a system prompt, naming a model other than the case's. */
export interface CallShape {
  stream: boolean;
  system?: string;
  model?: string;
}

export interface SkillSurface {
  name: string;
  /** the surface id as the gateway names it (x-gw-skills acts on it, rows carry it) */
  surface: string;
  /** the model the case names unless a call names another (none: the route names no model, a cloudx deployment) */
  model: string | undefined;
  path(c: CallShape): string;
  headers(devKey: string): Record<string, string>;
  body(text: string, c: CallShape): string;
  /** the reply's text: a whole JSON body, or the concatenated deltas of a stream */
  replyText(bytes: Buffer, stream: boolean): string;
}

const bearer = (k: string) => ({ authorization: `Bearer ${k}`, 'x-gw-provider-key': 'sk-upstream' });

const sseEvents = (bytes: Buffer): Array<{ event: string | undefined; data: Json }> =>
  bytes
    .toString('utf8')
    .split(/\r?\n\r?\n/)
    .flatMap((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = block
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trim())
        .join('\n');
      if (data === '' || data === '[DONE]') return [];
      return [{ event, data: JSON.parse(data) as Json }];
    });

const codec = new EventStreamCodec(toUtf8, fromUtf8);

/** Bedrock's binary frames, decoded in order */
function frames(bytes: Buffer): Array<{ event: string; data: Json }> {
  const out: Array<{ event: string; data: Json }> = [];
  for (let at = 0; at < bytes.length; ) {
    const total = bytes.readUInt32BE(at);
    const m = codec.decode(bytes.subarray(at, at + total));
    out.push({ event: String(m.headers[':event-type']?.value), data: JSON.parse(toUtf8(m.body)) as Json });
    at += total;
  }
  return out;
}

const get = (v: unknown, ...path: Array<string | number>): unknown => path.reduce<unknown>((o, k) => (o as Record<string | number, unknown> | undefined)?.[k], v);
const str = (v: unknown) => (typeof v === 'string' ? v : '');
const json = (b: Buffer) => JSON.parse(b.toString('utf8')) as Json;

const chatText = (bytes: Buffer, stream: boolean) =>
  stream ? sseEvents(bytes).map((e) => str(get(e.data, 'choices', 0, 'delta', 'content'))).join('') : str(get(json(bytes), 'choices', 0, 'message', 'content'));

export const SKILL_SURFACES: SkillSurface[] = [
  {
    name: 'chat-completions',
    surface: 'chat_completions',
    model: 'gpt-4o',
    path: () => '/v1/chat/completions',
    headers: bearer,
    body: (t, { stream, system, model = 'gpt-4o' }) => JSON.stringify({ model, messages: [...(system ? [{ role: 'system', content: system }] : []), { role: 'user', content: t }], ...(stream && { stream: true }) }),
    replyText: chatText,
  },
  {
    name: 'chat-completions translated to messages',
    surface: 'chat_completions',
    model: 'claude-haiku-4-5',
    path: () => '/v1/chat/completions',
    headers: bearer,
    body: (t, { stream, system, model = 'claude-haiku-4-5' }) => JSON.stringify({ model, messages: [...(system ? [{ role: 'system', content: system }] : []), { role: 'user', content: t }], ...(stream && { stream: true }) }),
    replyText: chatText,
  },
  {
    name: 'responses',
    surface: 'responses',
    model: 'gpt-4o',
    path: () => '/v1/responses',
    headers: bearer,
    body: (t, { stream, system, model = 'gpt-4o' }) => JSON.stringify({ model, ...(system && { instructions: system }), input: t, ...(stream && { stream: true }) }),
    replyText: (bytes, stream) =>
      stream
        ? sseEvents(bytes)
            .filter((e) => e.data['type'] === 'response.output_text.delta')
            .map((e) => str(e.data['delta']))
            .join('')
        : ((get(json(bytes), 'output') as Json[]) ?? []).flatMap((o) => ((o['content'] as Json[]) ?? []).map((c) => str(c['text']))).join(''),
  },
  {
    name: 'messages',
    surface: 'messages',
    model: 'claude-haiku-4-5',
    path: () => '/msgvendor/v1/messages',
    headers: (k) => ({ 'x-api-key': k, 'x-gw-provider-key': 'sk-ant-upstream', 'anthropic-version': '2023-06-01' }),
    body: (t, { stream, system, model = 'claude-haiku-4-5' }) => JSON.stringify({ model, max_tokens: 64, ...(system && { system }), messages: [{ role: 'user', content: t }], ...(stream && { stream: true }) }),
    replyText: (bytes, stream) =>
      stream
        ? sseEvents(bytes)
            .filter((e) => e.data['type'] === 'content_block_delta')
            .map((e) => str(get(e.data, 'delta', 'text')))
            .join('')
        : ((json(bytes)['content'] as Json[]) ?? []).map((c) => str(c['text'])).join(''),
  },
  {
    name: 'generate-content',
    surface: 'generate_content',
    model: 'gemini-2.5-flash',
    path: ({ stream, model = 'gemini-2.5-flash' }) => `/genvendor/v1beta/models/${model}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
    headers: (k) => ({ 'x-goog-api-key': k, 'x-gw-provider-key': 'AIzaSy-upstream' }),
    body: (t, { system }) => JSON.stringify({ ...(system && { systemInstruction: { parts: [{ text: system }] } }), contents: [{ role: 'user', parts: [{ text: t }] }] }),
    replyText: (bytes, stream) => {
      const parts = (v: Json) => ((get(v, 'candidates', 0, 'content', 'parts') as Json[]) ?? []).map((p) => str(p['text'])).join('');
      return stream ? sseEvents(bytes).map((e) => parts(e.data)).join('') : parts(json(bytes));
    },
  },
  {
    name: 'converse',
    surface: 'converse',
    model: BEDROCK_MODEL,
    path: ({ stream, model = BEDROCK_MODEL }) => `/cloudy/model/${encodeURIComponent(model)}/${stream ? 'converse-stream' : 'converse'}`,
    headers: (k) => ({ authorization: `Bearer ${k}`, 'x-gw-provider-key': 'ABSKQmVkcm9ja0FQSUtleS1mYWtlLWtleQ==' }),
    body: (t, { system }) => JSON.stringify({ ...(system && { system: [{ text: system }] }), messages: [{ role: 'user', content: [{ text: t }] }] }),
    replyText: (bytes, stream) =>
      stream
        ? frames(bytes)
            .filter((f) => f.event === 'contentBlockDelta')
            .map((f) => str(get(f.data, 'delta', 'text')))
            .join('')
        : ((get(json(bytes), 'output', 'message', 'content') as Json[]) ?? []).map((c) => str(c['text'])).join(''),
  },
  {
    name: 'cloudx chat',
    surface: 'cloudx',
    model: undefined,
    path: () => '/cloudx/compat/openai/deployments/d1/chat/completions?api-version=2024-10-21',
    headers: (k) => ({ 'x-gw-key': k, 'api-key': 'azure-upstream' }),
    body: (t, { stream, system }) => JSON.stringify({ messages: [...(system ? [{ role: 'system', content: system }] : []), { role: 'user', content: t }], ...(stream && { stream: true }) }),
    replyText: chatText,
  },
  {
    name: 'execute',
    surface: 'execute',
    model: 'gpt-4o',
    path: () => '/v1/execute',
    headers: bearer,
    body: (t, { stream, system, model = 'gpt-4o' }) =>
      JSON.stringify({ input: { messages: [...(system ? [{ role: 'system', content: system }] : []), { role: 'user', content: t }] }, target: { model }, ...(stream && { execution: { stream: true } }) }),
    replyText: (bytes, stream) =>
      stream
        ? sseEvents(bytes)
            .filter((e) => e.event === 'output.delta')
            .map((e) => str(e.data['content']))
            .join('')
        : str(get(json(bytes), 'output', 'content')),
  },
];

/** Every provider's upstream at one fake. */
export const echoEnv = (fake: FakeVendor): Record<string, string> => ({
  GW_UPSTREAM_OPENAI: fake.origin,
  GW_UPSTREAM_CLOUDX: fake.origin,
  GW_UPSTREAM_MSGVENDOR: fake.origin,
  GW_UPSTREAM_GENVENDOR: fake.origin,
  GW_UPSTREAM_CLOUDY: fake.origin,
});

export interface SurfaceCall {
  status: number;
  headers: Headers;
  bytes: Buffer;
  /** the reply's text */
  text: string;
  /** what the fake received for this call (empty: nothing went upstream) */
  upstream: FakeVendor['received'];
}

export interface CallOptions {
  stream?: boolean;
  headers?: Record<string, string>;
  system?: string;
  model?: string;
}

/** Calls a surface with one user turn and reads what came back and what went upstream. */
export async function callSurface(
  gw: TestGateway,
  fake: FakeVendor,
  s: SkillSurface,
  devKey: string,
  text: string,
  opts: CallOptions = {},
): Promise<SurfaceCall> {
  const shape: CallShape = { stream: opts.stream === true, ...(opts.system !== undefined && { system: opts.system }), ...(opts.model !== undefined && { model: opts.model }) };
  const n = fake.received.length;
  const res = await fetch(`${gw.url}${s.path(shape)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...s.headers(devKey), ...opts.headers },
    body: s.body(text, shape),
  });
  const stream = shape.stream;
  const bytes = Buffer.from(await res.arrayBuffer());
  const ok = res.status >= 200 && res.status < 300;
  return { status: res.status, headers: res.headers, bytes, text: ok ? s.replyText(bytes, stream) : '', upstream: fake.received.slice(n) };
}

/** The value of one metric series on /metrics (`name{labels}` exactly as exposed), 0 when absent. */
export async function metricValue(gw: TestGateway, series: string): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/**
 * Calls a surface whose upstream (the echo vendor) holds its answer until
 * the metric series `until` has grown: a shadow stage beside dispatch has
 * then finished, so its header and row are there whatever the machine's speed.
 */
export async function callHeld(
  gw: TestGateway,
  echo: EchoVendor,
  s: SkillSurface,
  devKey: string,
  text: string,
  until: string,
  opts: CallOptions = {},
): Promise<SurfaceCall> {
  const before = await metricValue(gw, until);
  const key = `hold-${++holds}`;
  const pending = callSurface(gw, echo, s, devKey, text, { ...opts, headers: { ...opts.headers, 'x-fake-hold': key } });
  await eventually(async () => (await metricValue(gw, until)) > before, until);
  echo.release(key);
  return pending;
}

let holds = 0;

/** A request's durable row and decision record, once telemetry has written it (read with the org's key). */
export async function durableRow<T>(gw: TestGateway, devKey: string, requestId: string): Promise<T> {
  let found: T | undefined;
  await eventually(async () => {
    const res = await fetch(`${gw.url}/api/v1/tenant/request/${encodeURIComponent(requestId)}`, { headers: { authorization: `Bearer ${devKey}` } });
    if (res.status === 200) found = (await res.json()) as T;
    return found !== undefined;
  }, `the durable row of ${requestId}`);
  return found as T;
}
