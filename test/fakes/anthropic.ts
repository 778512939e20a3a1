import type { ServerResponse } from 'node:http';
import { cacheScriptOf } from './cache-script.js';
import { scriptOf } from './scripted-stream.js';
import { sendJson, sleep, startFakeVendor, type FakeVendor } from './server.js';

/**
 * A fake Anthropic Messages API, also answering Claude on Vertex
 * (`/v1/projects/{p}/locations/{l}/publishers/anthropic/models/{model}:rawPredict`,
 * `:streamRawPredict`, and the `count-tokens` model). Wire format as the vendor
 * sends it: the message object, SSE named events, `{type:"error", error:{…}}`.
 * Behaviour is scripted by the model name:
 * - `error_<status>`: the vendor's error envelope with that status
 * - `truncated`: 200 with a body cut mid-JSON
 * - `stall_stream`: sends message_start, then goes silent
 * - `break_stream`: sends a few events, then drops the connection
 * - `overloaded_stream`: a stream that ends with the vendor's `overloaded_error` event
 * - a catalog name ending in `-error_<status>` or `-<script>` behaves like the bare script (a call routed here by translation)
 * - a name ending in `-malformed`: 200 with a JSON body whose content holds a null block
 * - a name ending in `-tool_use`: the reply calls the tool `get_weather` (stop_reason `tool_use`)
 * - a name ending in `-cache_<read>_<written>`: usage with those cache reads and writes (./cache-script.ts)
 * anything else answers normally (streaming when `stream: true` or on `:streamRawPredict`),
 * with a thinking block (and its signature) when the request asks for thinking.
 */
export function startFakeAnthropic(): Promise<FakeVendor> {
  return startFakeVendor(async (req, res) => {
    const url = new URL(req.url, 'http://fake');
    const vertex = /^\/v1\/projects\/[^/]+\/locations\/[^/]+\/publishers\/anthropic\/models\/([^/:]+):(rawPredict|streamRawPredict)$/.exec(url.pathname);
    const body = JSON.parse(req.body.toString('utf8')) as { model?: string; stream?: boolean; thinking?: { type: string } };
    const countTokens = url.pathname === '/v1/messages/count_tokens' || vertex?.[1] === 'count-tokens';
    if (!vertex && url.pathname !== '/v1/messages' && !countTokens) {
      return vendorError(res, 404, 'not_found_error', `Not found: ${url.pathname}`);
    }
    const model = vertex && !countTokens ? decodeURIComponent(vertex[1] as string) : (body.model ?? '');
    const err = /(?:^|-)error_(\d{3})$/.exec(model);
    if (err) {
      const status = Number(err[1]);
      return vendorError(res, status, ERROR_TYPES[status] ?? 'api_error', `scripted ${status}`);
    }
    if (scriptOf(model) === 'truncated') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end('{"id":"msg_trunc","type":"mess');
    }
    if (countTokens) return sendJson(res, 200, { input_tokens: 42 }, { 'request-id': 'req_fake_count' });
    const thinking = body.thinking?.type === 'enabled';
    if (model.endsWith('-malformed')) return sendJson(res, 200, { ...message(model, false), content: [null] });
    if (model.endsWith('-tool_use')) return body.stream ? toolUseStream(res, model) : sendJson(res, 200, toolUseMessage(model));
    if (body.stream || vertex?.[2] === 'streamRawPredict') return stream(res, model, thinking);
    sendJson(res, 200, message(model, thinking), { 'request-id': 'req_fake_anthropic', 'anthropic-organization-id': 'org-fake' });
  });
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

export function vendorError(res: ServerResponse, status: number, type: string, message: string): void {
  sendJson(res, status, { type: 'error', error: { type, message }, request_id: 'req_fake_error' }, { 'request-id': 'req_fake_error', ...(status === 429 ? { 'retry-after': '7' } : {}) });
}

export const SIGNATURE = 'EqQBCkYIBxgCKkBfakeSignatureOfTheThinkingBlock==';
export const THINKING = 'Let me think about this.';
export const TEXT = 'Hello from the fake.';

/** Messages usage: `input_tokens` counts only the prompt after the last cache breakpoint, apart from cache reads and writes */
function usageOf(model: string) {
  const script = cacheScriptOf(model);
  if (!script) return { input_tokens: 21, cache_creation_input_tokens: 0, cache_read_input_tokens: 4, output_tokens: 9 };
  return { input_tokens: script.plain, cache_creation_input_tokens: script.written, cache_read_input_tokens: script.read, output_tokens: 9 };
}

export function message(model: string, thinking: boolean) {
  return {
    id: 'msg_fake123',
    type: 'message',
    role: 'assistant',
    model,
    content: [...(thinking ? [{ type: 'thinking', thinking: THINKING, signature: SIGNATURE }] : []), { type: 'text', text: TEXT }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: usageOf(model),
  };
}

async function stream(res: ServerResponse, model: string, thinking: boolean): Promise<void> {
  const script = scriptOf(model);
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'request-id': 'req_fake_stream' });
  const send = (type: string, data: Record<string, unknown>) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  send('message_start', { message: { ...message(model, false), content: [], stop_reason: null, usage: { ...usageOf(model), output_tokens: 1 } } });
  if (script === 'stall_stream') return;
  let index = 0;
  if (thinking) {
    send('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } });
    send('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: THINKING } });
    send('content_block_delta', { index, delta: { type: 'signature_delta', signature: SIGNATURE } });
    send('content_block_stop', { index });
    index++;
  }
  send('content_block_start', { index, content_block: { type: 'text', text: '' } });
  send('ping', {});
  send('content_block_delta', { index, delta: { type: 'text_delta', text: 'Hello' } });
  if (script === 'break_stream') {
    await sleep(15);
    res.socket?.destroy();
    return;
  }
  if (script === 'overloaded_stream') {
    send('error', { error: { type: 'overloaded_error', message: 'Overloaded' } });
    return void res.end();
  }
  send('content_block_delta', { index, delta: { type: 'text_delta', text: ' from the fake.' } });
  send('content_block_stop', { index });
  send('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 9 } });
  send('message_stop', {});
  res.end();
}

export const TOOL_USE = { id: 'toolu_fake01', name: 'get_weather', input: { city: 'Paris', unit: 'c' } };

export function toolUseMessage(model: string) {
  return { ...message(model, false), content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', ...TOOL_USE }], stop_reason: 'tool_use' };
}

/** A streamed tool call: the input arrives as partial JSON across two deltas. */
function toolUseStream(res: ServerResponse, model: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
  const send = (type: string, data: Record<string, unknown>) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  const input = JSON.stringify(TOOL_USE.input);
  send('message_start', { message: { ...message(model, false), content: [], stop_reason: null, usage: { ...usageOf(model), output_tokens: 1 } } });
  send('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
  send('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Checking.' } });
  send('content_block_stop', { index: 0 });
  send('content_block_start', { index: 1, content_block: { type: 'tool_use', id: TOOL_USE.id, name: TOOL_USE.name, input: {} } });
  send('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: input.slice(0, 9) } });
  send('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: input.slice(9) } });
  send('content_block_stop', { index: 1 });
  send('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 14 } });
  send('message_stop', {});
  res.end();
}
