import { fileURLToPath } from 'node:url';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import type { HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { loadUws } from '../src/server/uws.js';

/**
 * The bench's upstream for every vendor it drives: native uWebSockets.js,
 * replies prebuilt, no JSON parsing, so that it is never what limits a run.
 * Each route reads the whole body (any size), then answers in the vendor's
 * wire format:
 * - POST /v1/chat/completions: a small chat.completion JSON, or, when the body
 *   has `"stream":true`, 20 chunk events (plus the usage chunk when it has
 *   `"include_usage":true`) and `data: [DONE]`;
 * - POST /v1/messages: the Messages SSE sequence (message_start,
 *   content_block_start, content_block_delta ×15, content_block_stop,
 *   message_delta with usage, message_stop);
 * - POST /model/{modelId}/converse-stream: ConverseStream's
 *   application/vnd.amazon.eventstream frames with valid prelude and message
 *   CRCs (messageStart, contentBlockDelta ×16, contentBlockStop, messageStop,
 *   metadata with usage).
 * - GET /v1/models: vLLM's list, the base model `bench-base` and the LoRA
 *   adapter `bench-lora` loaded on it; POST /v1/load_lora_adapter and
 *   /v1/unload_lora_adapter: vLLM's success line (for the self-hosted scenario).
 * A stream writes one event per event-loop turn, so the events reach the proxy
 * as separate reads, the way a model streams.
 */

export const STREAM_CHUNKS = 20;

const VLLM_MODELS = JSON.stringify({
  object: 'list',
  data: [
    { id: 'bench-base', object: 'model', created: 1_700_000_000, owned_by: 'vllm', root: 'bench-base', parent: null },
    { id: 'bench-lora', object: 'model', created: 1_700_000_000, owned_by: 'vllm', root: '/adapters/bench', parent: 'bench-base' },
  ],
});
const MESSAGES_TEXT_DELTAS = 15;
const CONVERSE_TEXT_DELTAS = 16;

const MODEL = 'gpt-4o';
const COMPLETION = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: MODEL,
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the bench upstream.', refusal: null }, logprobs: null, finish_reason: 'stop' }],
  usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
  system_fingerprint: 'fp_bench',
});

const dataEvent = (payload: object) => `data: ${JSON.stringify(payload)}\n\n`;
const chunkEvent = (delta: object, finish: string | null) =>
  dataEvent({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_700_000_000, model: MODEL, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });

/** chunk 0 opens the assistant turn, 1..18 carry words, 19 finishes */
const CHAT_CHUNKS: string[] = Array.from({ length: STREAM_CHUNKS }, (_, i) => {
  if (i === 0) return chunkEvent({ role: 'assistant', content: '' }, null);
  if (i === STREAM_CHUNKS - 1) return chunkEvent({}, 'stop');
  return chunkEvent({ content: ` word${i}` }, null);
});
const CHAT_USAGE = dataEvent({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_700_000_000, model: MODEL, choices: [], usage: { prompt_tokens: 12, completion_tokens: 18, total_tokens: 30 } });
const CHAT_DONE = 'data: [DONE]\n\n';
const CHAT_STREAM = [...CHAT_CHUNKS, CHAT_USAGE, CHAT_DONE];
const CHAT_STREAM_NO_USAGE = [...CHAT_CHUNKS, CHAT_DONE];

/** A named SSE event as the Messages API writes it: the event name repeated as `type` in the data. */
const namedEvent = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const MESSAGES_STREAM: string[] = [
  namedEvent('message_start', {
    message: {
      id: 'msg_bench',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 },
    },
  }),
  namedEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
  ...Array.from({ length: MESSAGES_TEXT_DELTAS }, (_, i) => namedEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: ` word${i + 1}` } })),
  namedEvent('content_block_stop', { index: 0 }),
  namedEvent('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: MESSAGES_TEXT_DELTAS } }),
  namedEvent('message_stop', {}),
];

const codec = new EventStreamCodec(toUtf8, fromUtf8);
/** One ConverseStream event frame; Bedrock pads each payload with a `p` member. */
const eventFrame = (eventType: string, payload: object): Uint8Array =>
  codec.encode({
    headers: {
      ':event-type': { type: 'string', value: eventType },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'event' },
    },
    body: fromUtf8(JSON.stringify({ ...payload, p: 'abcdefghijklmnopqrstuvwxyzABCDEF'.slice(0, 7 + eventType.length) })),
  });
const CONVERSE_EVENTS: [string, object][] = [
  ['messageStart', { role: 'assistant' }],
  ...Array.from({ length: CONVERSE_TEXT_DELTAS }, (_, i): [string, object] => ['contentBlockDelta', { contentBlockIndex: 0, delta: { text: ` word${i + 1}` } }]),
  ['contentBlockStop', { contentBlockIndex: 0 }],
  ['messageStop', { stopReason: 'end_turn' }],
  ['metadata', { usage: { inputTokens: 12, outputTokens: CONVERSE_TEXT_DELTAS, totalTokens: 12 + CONVERSE_TEXT_DELTAS }, metrics: { latencyMs: 40 } }],
];
const CONVERSE_STREAM = CONVERSE_EVENTS.map(([type, payload]) => eventFrame(type, payload));

/** what a stream scenario checks its reply against: the events in the order the upstream writes them */
export const STREAM_EVENTS = {
  /** with usage: the chunks, the usage chunk, [DONE] */
  chat: CHAT_STREAM.length,
  messages: MESSAGES_STREAM.map((e) => e.slice('event: '.length, e.indexOf('\n'))),
  converse: CONVERSE_EVENTS.map(([type]) => type),
};

const SSE_HEADERS: [string, string][] = [
  ['content-type', 'text/event-stream; charset=utf-8'],
  ['cache-control', 'no-cache'],
];
const EVENTSTREAM_HEADERS: [string, string][] = [
  ['content-type', 'application/vnd.amazon.eventstream'],
  ['x-amzn-requestid', 'bench-req'],
];

/** The first event goes out with the status line; each next one in its own event-loop turn; the last one ends the reply. */
function writeStream(res: HttpResponse, headers: [string, string][], events: (string | Uint8Array)[], aborted: () => boolean): void {
  res.cork(() => {
    res.writeStatus('200 OK');
    for (const [name, value] of headers) res.writeHeader(name, value);
    res.write(events[0]!);
  });
  let next = 1;
  const step = () => {
    if (aborted()) return;
    const e = events[next++]!;
    if (next < events.length) {
      res.cork(() => res.write(e));
      setImmediate(step);
    } else {
      res.cork(() => res.end(e));
    }
  };
  setImmediate(step);
}

/** Reads the whole request body, then calls `reply` (unless the client went away). */
function withBody(reply: (res: HttpResponse, body: Buffer, aborted: () => boolean) => void) {
  return (res: HttpResponse) => {
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    const parts: Buffer[] = [];
    res.onData((chunk, isLast) => {
      // uWS reuses the chunk's memory after this callback returns: copy it
      parts.push(Buffer.from(new Uint8Array(chunk)));
      if (!isLast || aborted) return;
      reply(res, parts.length === 1 ? parts[0]! : Buffer.concat(parts), () => aborted);
    });
  };
}

const STREAM_FLAG = Buffer.from('"stream":true');
const USAGE_FLAG = Buffer.from('"include_usage":true');

function route(app: TemplatedApp): void {
  app.post(
    '/v1/chat/completions',
    withBody((res, body, aborted) => {
      if (body.includes(STREAM_FLAG)) return writeStream(res, SSE_HEADERS, body.includes(USAGE_FLAG) ? CHAT_STREAM : CHAT_STREAM_NO_USAGE, aborted);
      res.cork(() => {
        res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(COMPLETION);
      });
    }),
  );
  app.post(
    '/v1/messages',
    withBody((res, _body, aborted) => writeStream(res, SSE_HEADERS, MESSAGES_STREAM, aborted)),
  );
  app.post(
    '/model/:modelId/converse-stream',
    withBody((res, _body, aborted) => writeStream(res, EVENTSTREAM_HEADERS, CONVERSE_STREAM, aborted)),
  );
  app.get('/v1/models', (res) => {
    res.cork(() => {
      res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(VLLM_MODELS);
    });
  });
  for (const path of ['/v1/load_lora_adapter', '/v1/unload_lora_adapter']) {
    app.post(
      path,
      withBody((res) => {
        res.cork(() => {
          res.writeStatus('200 OK').writeHeader('content-type', 'text/plain; charset=utf-8').end('Success: LoRA adapter updated.');
        });
      }),
    );
  }
  app.any('/*', (res) => {
    res.writeStatus('404 Not Found').writeHeader('content-type', 'application/json').end('{"error":{"message":"not found","type":"invalid_request_error"}}');
  });
}

export interface FakeUpstream {
  port: number;
  close(): void;
}

export function startFakeUpstream(port = 0): Promise<FakeUpstream> {
  const { uws } = loadUws(false);
  const app = uws.App();
  route(app);
  return new Promise((resolve, reject) => {
    app.listen('127.0.0.1', port, (socket) => {
      if (!socket) return reject(new Error(`fake upstream: cannot listen on ${port}`));
      resolve({ port: uws.us_socket_local_port(socket), close: () => uws.us_listen_socket_close(socket) });
    });
  });
}

// run as its own process (the bench pins it to a CPU): prints its port, then serves
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const up = await startFakeUpstream(Number(process.argv[2] ?? 0));
  process.stdout.write(`listening ${up.port}\n`);
  process.once('SIGTERM', () => {
    up.close();
    process.exit(0);
  });
}
