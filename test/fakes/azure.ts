import type { ServerResponse } from 'node:http';
import { completion } from './openai.js';
import { sendJson, sleep, startFakeVendor, type FakeVendor } from './server.js';

/**
 * A fake Azure OpenAI resource (and OpenAI's own Responses API): the OpenAI
 * wire format on Azure's paths. It answers
 * - `/openai/deployments/{deployment}/chat/completions` and `…/embeddings` (api-version required),
 * - `/openai/v1/chat/completions`, `/openai/v1/responses` and `/openai/responses`,
 * - `/v1/responses` (OpenAI's origin).
 * Behaviour is scripted by the deployment or model name:
 * - `error_<status>`: Azure's error envelope `{error:{code,message}}` with that status
 * - `truncated`: 200 with a body cut mid-JSON
 * - `stall_stream`: streams one event, then goes silent
 * - `break_stream`: streams a few events, then drops the connection
 * - `fail_stream`: a Responses stream that ends with the API's `error` event
 * anything else answers normally (streaming when `stream: true`).
 */
/** a few bytes of an MP3 (ID3 header, then a frame sync): not JSON, as a speech reply is not */
export const SPEECH = Buffer.from([0x49, 0x44, 0x33, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xfb, 0x90, 0x64, 0x00, 0x7b, 0x22]);

export function startFakeAzure(): Promise<FakeVendor> {
  return startFakeVendor(async (req, res) => {
    const url = new URL(req.url, 'http://fake');
    const path = url.pathname;
    const deployment = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|embeddings|audio\/speech)$/.exec(path);
    const isAzure = path.startsWith('/openai/');
    if (isAzure && !url.searchParams.get('api-version') && !path.startsWith('/openai/v1/')) {
      return sendJson(res, 404, { error: { code: '404', message: 'Resource not found' } });
    }
    const body = JSON.parse(req.body.toString('utf8')) as { model?: string; stream?: boolean };
    const name = deployment ? decodeURIComponent(deployment[1] as string) : (body.model ?? '');
    const err = /^error_(\d{3})$/.exec(name);
    if (err) {
      const status = Number(err[1]);
      return sendJson(res, status, { error: { code: String(status), message: `scripted ${status}` } }, status === 429 ? { 'retry-after': '7' } : {});
    }
    if (name === 'truncated') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end('{"id":"resp_trunc","object":"resp');
    }
    if (deployment?.[2] === 'embeddings' || path === '/openai/v1/embeddings') return sendJson(res, 200, embedding(name));
    if (deployment?.[2] === 'audio/speech') {
      res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': SPEECH.length });
      return void res.end(SPEECH);
    }
    if (path.endsWith('/chat/completions')) {
      return body.stream ? chatStream(res, name) : sendJson(res, 200, completion(name), { 'apim-request-id': 'apim-fake' });
    }
    if (path === '/openai/v1/responses' || path === '/openai/responses' || path === '/v1/responses') {
      return body.stream ? responseStream(res, name) : sendJson(res, 200, responseObject(name), { 'x-request-id': 'req_fake_responses' });
    }
    sendJson(res, 404, { error: { code: '404', message: `Resource not found: ${path}` } });
  });
}

export const embedding = (model: string) => ({
  object: 'list',
  data: [{ object: 'embedding', index: 0, embedding: [0.25, -0.5, 0.125] }],
  model,
  usage: { prompt_tokens: 3, total_tokens: 3 },
});

/** A completed Responses object with a reasoning item (encrypted) and a message. */
export function responseObject(model: string, status: 'completed' | 'in_progress' = 'completed') {
  return {
    id: 'resp_fake123',
    object: 'response',
    created_at: 1_700_000_000,
    status,
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: null,
    model,
    output:
      status === 'completed'
        ? [
            { id: 'rs_fake1', type: 'reasoning', summary: [], encrypted_content: 'gAAAAABfakeEncryptedReasoning==' },
            { id: 'msg_fake1', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Hello from the fake.', annotations: [] }] },
          ]
        : [],
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: false,
    temperature: 1,
    text: { format: { type: 'text' } },
    tool_choice: 'auto',
    tools: [],
    top_p: 1,
    truncation: 'disabled',
    usage: status === 'completed' ? { input_tokens: 12, input_tokens_details: { cached_tokens: 2 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 1 }, total_tokens: 17 } : null,
    user: null,
    metadata: {},
  };
}

const flush = () => sleep(15);

async function responseStream(res: ServerResponse, model: string): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  let seq = 0;
  const send = (type: string, fields: Record<string, unknown>) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...fields })}\n\n`);
  send('response.created', { response: responseObject(model, 'in_progress') });
  if (model === 'stall_stream') return;
  send('response.in_progress', { response: responseObject(model, 'in_progress') });
  const item = { id: 'msg_fake1', type: 'message', status: 'in_progress', role: 'assistant', content: [] };
  send('response.output_item.added', { output_index: 0, item });
  if (model === 'break_stream') {
    await flush();
    res.socket?.destroy();
    return;
  }
  if (model === 'fail_stream') {
    send('error', { code: 'server_error', message: 'scripted failure', param: null });
    return void res.end();
  }
  send('response.content_part.added', { item_id: 'msg_fake1', output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
  for (const delta of ['Hello', ' from', ' the', ' fake.']) send('response.output_text.delta', { item_id: 'msg_fake1', output_index: 0, content_index: 0, delta });
  send('response.output_text.done', { item_id: 'msg_fake1', output_index: 0, content_index: 0, text: 'Hello from the fake.' });
  send('response.content_part.done', { item_id: 'msg_fake1', output_index: 0, content_index: 0, part: { type: 'output_text', text: 'Hello from the fake.', annotations: [] } });
  send('response.output_item.done', { output_index: 0, item: { ...item, status: 'completed', content: [{ type: 'output_text', text: 'Hello from the fake.', annotations: [] }] } });
  send('response.completed', { response: responseObject(model) });
  res.end();
}

const chatChunk = (model: string, delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-azure1', object: 'chat.completion.chunk', created: 1_700_000_000, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;

async function chatStream(res: ServerResponse, model: string): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
  res.write(chatChunk(model, { role: 'assistant', content: '' }));
  if (model === 'stall_stream') return;
  res.write(chatChunk(model, { content: 'Hello' }));
  if (model === 'break_stream') {
    await flush();
    res.socket?.destroy();
    return;
  }
  res.write(chatChunk(model, { content: ' from Azure.' }));
  res.write(chatChunk(model, {}, 'stop'));
  res.end('data: [DONE]\n\n');
}
