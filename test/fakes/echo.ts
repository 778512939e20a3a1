import type { ServerResponse } from 'node:http';
import { eventFrame } from './bedrock.js';
import { sendJson, startFakeVendor, type FakeVendor, type Recorded } from './server.js';

/**
 * A fake of every vendor whose reply says back what it was sent: the text of
 * the request's last user turn, in the vendor's own wire format, whole or
 * streamed in deltas of five characters (so a placeholder such as
 * `[EMAIL_1]` arrives split across events). `x-fake-reply: <text>` answers
 * that text instead; `x-fake-hold: <key>` answers only once the test calls
 * `release(key)`; a body naming the model `error_<status>` is answered with that
 * status. It serves
 * - OpenAI: `/v1/chat/completions`, `/v1/responses`, Azure's `/openai/deployments/{d}/chat/completions`;
 * - Anthropic: `/v1/messages`;
 * - Gemini: `/v1beta/models/{model}:generateContent` and `:streamGenerateContent`;
 * - Bedrock: `/model/{id}/converse` and `/model/{id}/converse-stream`.
 * Every reply carries usage (12 prompt tokens, 5 output tokens).
 */

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** every string under a `text` key (or a bare string content) of one turn */
function texts(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  if (Array.isArray(v)) return v.flatMap(texts);
  if (!isObj(v)) return [];
  return Object.entries(v).flatMap(([k, x]) => (typeof x === 'string' ? (k === 'text' ? [x] : []) : texts(x)));
}

/** The last user turn's text in any vendor's request shape. */
export function lastUserText(body: Json): string {
  const turns = (body['messages'] ?? body['contents'] ?? body['input']) as unknown;
  if (typeof turns === 'string') return turns;
  const list = Array.isArray(turns) ? turns.filter(isObj) : [];
  const users = list.filter((t) => t['role'] === 'user' || t['role'] === undefined);
  const last = users[users.length - 1];
  if (last === undefined) return '';
  const content = last['content'] ?? last['parts'];
  return typeof content === 'string' ? content : texts(content).join('');
}

const pieces = (text: string): string[] => text.match(/[\s\S]{1,5}/g) ?? [''];

const sse = (res: ServerResponse, events: string[]) => {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
  for (const e of events) res.write(e);
  res.end();
};

const data = (payload: unknown, event?: string) => `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(payload)}\n\n`;

function chat(res: ServerResponse, model: string, text: string, stream: boolean): void {
  const base = { id: 'chatcmpl-echo', created: 1_700_000_000, model };
  const usage = { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 };
  if (!stream) {
    return sendJson(res, 200, { ...base, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage });
  }
  const chunk = (delta: Json, finish: string | null = null, extra: Json = {}) => data({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }], ...extra });
  sse(res, [chunk({ role: 'assistant', content: '' }), ...pieces(text).map((p) => chunk({ content: p })), chunk({}, 'stop', { usage }), 'data: [DONE]\n\n']);
}

function responses(res: ServerResponse, model: string, text: string, stream: boolean): void {
  const message = { id: 'msg_echo', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] };
  const response = { id: 'resp_echo', object: 'response', created_at: 1_700_000_000, status: 'completed', model, output: [message], usage: { input_tokens: 12, output_tokens: 5, total_tokens: 17 } };
  if (!stream) return sendJson(res, 200, response);
  const ev = (type: string, fields: Json) => data({ type, ...fields }, type);
  sse(res, [
    ev('response.created', { response: { ...response, status: 'in_progress', output: [] } }),
    ...pieces(text).map((delta) => ev('response.output_text.delta', { item_id: 'msg_echo', output_index: 0, content_index: 0, delta })),
    ev('response.output_text.done', { item_id: 'msg_echo', output_index: 0, content_index: 0, text }),
    ev('response.completed', { response }),
  ]);
}

function messages(res: ServerResponse, model: string, text: string, stream: boolean): void {
  const usage = { input_tokens: 12, output_tokens: 5 };
  const message = { id: 'msg_echo', type: 'message', role: 'assistant', model, content: [{ type: 'text', text }], stop_reason: 'end_turn', stop_sequence: null, usage };
  if (!stream) return sendJson(res, 200, message);
  const ev = (type: string, fields: Json) => data({ type, ...fields }, type);
  sse(res, [
    ev('message_start', { message: { ...message, content: [], stop_reason: null, usage: { input_tokens: 12, output_tokens: 1 } } }),
    ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    ...pieces(text).map((t) => ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: t } })),
    ev('content_block_stop', { index: 0 }),
    ev('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 5 } }),
    ev('message_stop', {}),
  ]);
}

function gemini(res: ServerResponse, model: string, text: string, stream: boolean): void {
  const usageMetadata = { promptTokenCount: 12, candidatesTokenCount: 5, totalTokenCount: 17 };
  const reply = (t: string, finish?: string) => ({ candidates: [{ content: { parts: [{ text: t }], role: 'model' }, ...(finish && { finishReason: finish }), index: 0 }], usageMetadata, modelVersion: model });
  if (!stream) return sendJson(res, 200, reply(text, 'STOP'));
  const parts = pieces(text);
  sse(
    res,
    parts.map((p, i) => `data: ${JSON.stringify(reply(p, i === parts.length - 1 ? 'STOP' : undefined))}\r\n\r\n`),
  );
}

function converse(res: ServerResponse, text: string, stream: boolean): void {
  const usage = { inputTokens: 12, outputTokens: 5, totalTokens: 17 };
  if (!stream) return sendJson(res, 200, { output: { message: { role: 'assistant', content: [{ text }] } }, stopReason: 'end_turn', usage, metrics: { latencyMs: 1 } });
  res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' });
  const frames = [
    eventFrame('messageStart', { role: 'assistant' }),
    ...pieces(text).map((t) => eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: t } })),
    eventFrame('contentBlockStop', { contentBlockIndex: 0 }),
    eventFrame('messageStop', { stopReason: 'end_turn' }),
    eventFrame('metadata', { usage, metrics: { latencyMs: 1 } }),
  ];
  for (const f of frames) res.write(f);
  res.end();
}

export interface EchoVendor extends FakeVendor {
  /** answers the calls held under `key` (`x-fake-hold: <key>`), now and from now on */
  release(key: string): void;
}

export async function startEchoVendor(): Promise<EchoVendor> {
  const held = new Map<string, { promise: Promise<void>; resolve: () => void }>();
  const gate = (key: string) => {
    let g = held.get(key);
    if (g === undefined) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      held.set(key, (g = { promise, resolve }));
    }
    return g;
  };
  const vendor = await startFakeVendor(async (req: Recorded, res) => {
    const hold = req.headers['x-fake-hold'];
    if (typeof hold === 'string') await gate(hold).promise;
    const body = JSON.parse(req.body.toString('utf8')) as Json;
    const scripted = req.headers['x-fake-reply'];
    const text = typeof scripted === 'string' ? scripted : lastUserText(body);
    const path = new URL(req.url, 'http://fake').pathname;
    const model = typeof body['model'] === 'string' ? body['model'] : '';
    const stream = body['stream'] === true;
    const failing = /^error_(\d{3})$/.exec(model);
    if (failing) return sendJson(res, Number(failing[1]), { error: { message: `scripted ${failing[1]}`, type: 'server_error' } });
    if (path.endsWith('/chat/completions')) return chat(res, model, text, stream);
    if (path.endsWith('/responses')) return responses(res, model, text, stream);
    if (path === '/v1/messages') return messages(res, model, text, stream);
    const g = /\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(path);
    if (g) return gemini(res, decodeURIComponent(g[1] as string), text, g[2] === 'streamGenerateContent');
    const c = /^\/model\/[^/]+\/(converse|converse-stream)$/.exec(path);
    if (c) return converse(res, text, c[1] === 'converse-stream');
    sendJson(res, 404, { error: { message: `no route ${path}` } });
  });
  return { ...vendor, release: (key) => gate(key).resolve() };
}
