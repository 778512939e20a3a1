import type { ServerResponse } from 'node:http';
import { cacheScriptOf } from './cache-script.js';
import { sendJson, sleep, startFakeVendor, type FakeVendor, type Recorded } from './server.js';

/**
 * A fake OpenAI API speaking its real wire format. Behaviour is scripted by
 * the model name:
 * - `error_<status>`: the vendor's error envelope with that status
 * - `truncated`: 200 with a body cut mid-JSON
 * - `plain_text`: 200 with a text/plain body
 * - `trickle_stream`: one chunk every 100 ms, forever
 * - `slow_<ms>`: waits before answering
 * - `stall_stream`: streams one chunk, then goes silent
 * - `stall_once_stream`: the first such call streams one chunk, then goes
 *   silent (a replica relaying it can be killed mid-stream); later ones
 *   stream normally (the caller's retry)
 * - `break_stream`: streams two chunks, then drops the connection
 * - `big_<bytes>`: a completion whose content is that many bytes
 * - `bigstream_<chunks>`: a stream of that many 64 KiB content chunks, written
 *   with the socket's backpressure honoured (`streamsFinished` counts completions)
 * - `…good_tools`: a tool call of the first declared tool whose arguments give
 *   each required property a value of its declared type
 * - `…bad_tools`: a tool call of the first declared tool whose arguments give
 *   each required property a value of the wrong type (violating the schema)
 * - `…-cache_<read>_<written>`: usage with that many cached prompt tokens
 *   (./cache-script.ts; OpenAI reports no writes, it bills them as input)
 * - `header_bytes`: a completion with an `x-vendor-note` header holding bytes
 *   beyond ASCII (NOTE_BYTES: UTF-8 and one lone Latin-1 byte)
 * anything else answers normally (streaming when `stream: true`).
 */
export interface FakeOpenAI extends FakeVendor {
  /** `bigstream_*` streams whose last byte was accepted by the socket */
  readonly streamsFinished: number;
}

/** the `header_bytes` model's header value: "Zoë, 🌍" in UTF-8, then é as one Latin-1 byte */
export const NOTE_BYTES = Buffer.concat([Buffer.from('Zoë, 🌍 ', 'utf8'), Buffer.from([0xe9])]);

export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  let streamsFinished = 0;
  let stalledOnce = false;
  const vendor = await startFakeVendor(async (req, res) => {
    if (!req.url.startsWith('/v1/chat/completions')) {
      return sendJson(res, 404, { error: { message: `Unknown request URL: POST ${req.url}`, type: 'invalid_request_error', param: null, code: 'unknown_url' } });
    }
    const body = JSON.parse(req.body.toString('utf8')) as { model: string; stream?: boolean; stream_options?: { include_usage?: boolean }; tools?: DeclaredTool[] };
    const model = body.model;
    const slow = /^slow_(\d+)$/.exec(model);
    if (slow) await sleep(Number(slow[1]));
    const err = /^error_(\d{3})$/.exec(model);
    if (err) {
      const status = Number(err[1]);
      return sendJson(res, status, { error: { message: `scripted ${status}`, type: status === 429 ? 'rate_limit_exceeded' : 'invalid_request_error', param: null, code: status === 401 ? 'invalid_api_key' : null } }, status === 429 ? { 'retry-after': '7' } : {});
    }
    if (model === 'plain_text') {
      // a proxy's page or a cut reply that calls itself text: still not the JSON the route promises
      res.writeHead(200, { 'content-type': 'text/plain' });
      return void res.end('upstream said something that is not JSON');
    }
    if (model === 'header_bytes') {
      // Node writes a header string one byte per character, unless the head goes out joined to a string body (then as UTF-8)
      const text = Buffer.from(JSON.stringify(completion(model)));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': text.length, 'x-vendor-note': NOTE_BYTES.toString('latin1') });
      return void res.end(text);
    }
    if (model === 'truncated') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end('{"id":"chatcmpl-trunc","object":"chat.comp');
    }
    const tools = /(good|bad)_tools$/.exec(model);
    if (tools && body.tools?.[0]) return sendJson(res, 200, toolCallCompletion(model, body.tools[0], tools[1] === 'good'));
    const big = /^big_(\d+)$/.exec(model);
    if (big) return sendJson(res, 200, completion(model, 'x'.repeat(Number(big[1]))));
    const bigStream = /^bigstream_(\d+)$/.exec(model);
    if (bigStream) {
      await largeStream(res, model, Number(bigStream[1]));
      streamsFinished++;
      return;
    }
    if (body.stream && model === 'stall_once_stream' && !stalledOnce) {
      stalledOnce = true;
      return stream(req, res, 'stall_stream', false);
    }
    if (body.stream) return stream(req, res, model, body.stream_options?.include_usage === true);
    sendJson(res, 200, completion(model), { 'x-request-id': 'req_fake_openai', 'openai-processing-ms': '12' });
  });
  return Object.defineProperty(vendor, 'streamsFinished', { get: () => streamsFinished }) as FakeOpenAI;
}

function drainOrClose(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done).off('close', done);
      resolve();
    };
    res.on('drain', done).on('close', done);
  });
}

async function largeStream(res: ServerResponse, model: string, chunks: number): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const event = chunk(model, { content: 'y'.repeat(64 * 1024) });
  for (let i = 0; i < chunks; i++) {
    if (res.destroyed) return;
    if (!res.write(event)) await drainOrClose(res);
  }
  res.end('data: [DONE]\n\n');
}

/** chat-completions usage: the prompt includes its cached tokens, as OpenAI counts them */
function usageOf(model: string, prompt: number, cached: number, completion: number) {
  const script = cacheScriptOf(model);
  const promptTokens = script ? script.plain + script.read + script.written : prompt;
  const cachedTokens = script ? script.read : cached;
  return { prompt_tokens: promptTokens, completion_tokens: completion, total_tokens: promptTokens + completion, prompt_tokens_details: { cached_tokens: cachedTokens } };
}

export function completion(model: string, content = 'Hello from the fake.') {
  return {
    id: 'chatcmpl-fake123',
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: usageOf(model, 12, 2, 5),
    system_fingerprint: 'fp_fake',
  };
}

export interface DeclaredTool {
  function: { name: string; parameters?: { properties?: Record<string, { type?: string }>; required?: string[] } };
}

const VALUE_OF_TYPE: Record<string, unknown> = { string: 'x', number: 1, integer: 1, boolean: true, array: [], object: {} };

/** A completion calling `tool`: its required properties get a value of their declared type, or (`faithful` false) of another type. */
export function toolCallCompletion(model: string, tool: DeclaredTool, faithful: boolean) {
  const { name, parameters } = tool.function;
  const args: Record<string, unknown> = {};
  for (const prop of parameters?.required ?? []) {
    const type = parameters?.properties?.[prop]?.type ?? 'string';
    args[prop] = faithful ? VALUE_OF_TYPE[type] : type === 'string' ? 42 : 'not-a-' + type;
  }
  return {
    ...completion(model),
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: null, refusal: null, tool_calls: [{ id: 'call_fake1', type: 'function', function: { name, arguments: JSON.stringify(args) } }] },
        logprobs: null,
        finish_reason: 'tool_calls',
      },
    ],
  };
}

const chunk = (model: string, delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-fake123', object: 'chat.completion.chunk', created: 1_700_000_000, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;

async function stream(_req: Recorded, res: ServerResponse, model: string, includeUsage: boolean): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  res.write(chunk(model, { role: 'assistant', content: '' }));
  if (model === 'stall_stream') return; // never ends: the gateway's idle timer must close it
  if (model === 'trickle_stream') {
    // never silent and never done: only the stream deadline ends it
    while (!res.destroyed) {
      await sleep(100);
      res.write(chunk(model, { content: '.' }));
    }
    return;
  }
  res.write(chunk(model, { content: 'Hello' }));
  if (model === 'break_stream') {
    // let the events reach the wire first: destroy() discards unflushed writes
    await sleep(50);
    res.socket?.destroy();
    return;
  }
  for (const word of [' from', ' the', ' fake.']) res.write(chunk(model, { content: word }));
  res.write(chunk(model, {}, 'stop'));
  if (includeUsage) {
    res.write(`data: ${JSON.stringify({ id: 'chatcmpl-fake123', object: 'chat.completion.chunk', created: 1_700_000_000, model, choices: [], usage: usageOf(model, 12, 0, 4) })}\n\n`);
  }
  res.end('data: [DONE]\n\n');
}
