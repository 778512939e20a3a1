import { fileURLToPath } from 'node:url';
import type { HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { loadUws } from '../src/server/uws.js';

/**
 * The bench's OpenAI upstream: native uWebSockets.js, replies prebuilt, no
 * JSON parsing, so that it is never what limits a run. POST /v1/chat/completions
 * reads the whole body (any size), then answers
 * - a small chat.completion JSON, or
 * - when the body has `"stream":true`, a 20-chunk SSE stream (plus the usage
 *   chunk when it has `"include_usage":true`), one write per event loop turn so
 *   the chunks reach the proxy as separate reads, the way a model streams.
 */

export const STREAM_CHUNKS = 20;

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

const event = (payload: object) => `data: ${JSON.stringify(payload)}\n\n`;
const chunkEvent = (delta: object, finish: string | null) =>
  event({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_700_000_000, model: MODEL, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });

/** chunk 0 opens the assistant turn, 1..18 carry words, 19 finishes */
const STREAM_EVENTS: string[] = Array.from({ length: STREAM_CHUNKS }, (_, i) => {
  if (i === 0) return chunkEvent({ role: 'assistant', content: '' }, null);
  if (i === STREAM_CHUNKS - 1) return chunkEvent({}, 'stop');
  return chunkEvent({ content: ` word${i}` }, null);
});
const USAGE_EVENT = event({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_700_000_000, model: MODEL, choices: [], usage: { prompt_tokens: 12, completion_tokens: 18, total_tokens: 30 } });
const DONE_EVENT = 'data: [DONE]\n\n';

const STREAM_FLAG = Buffer.from('"stream":true');
const USAGE_FLAG = Buffer.from('"include_usage":true');

function streamReply(res: HttpResponse, withUsage: boolean, aborted: () => boolean): void {
  const events = withUsage ? [...STREAM_EVENTS, USAGE_EVENT] : STREAM_EVENTS;
  res.cork(() => {
    res.writeStatus('200 OK').writeHeader('content-type', 'text/event-stream; charset=utf-8').writeHeader('cache-control', 'no-cache');
    res.write(events[0]!);
  });
  let next = 1;
  const step = () => {
    if (aborted()) return;
    if (next < events.length) {
      const e = events[next++]!;
      res.cork(() => res.write(e));
      setImmediate(step);
    } else {
      res.cork(() => res.end(DONE_EVENT));
    }
  };
  setImmediate(step);
}

function route(app: TemplatedApp): void {
  app.post('/v1/chat/completions', (res) => {
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    const parts: Buffer[] = [];
    res.onData((chunk, isLast) => {
      // uWS reuses the chunk's memory after this callback returns: copy it
      parts.push(Buffer.from(new Uint8Array(chunk)));
      if (!isLast) return;
      const body = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
      if (body.includes(STREAM_FLAG)) return streamReply(res, body.includes(USAGE_FLAG), () => aborted);
      res.cork(() => {
        res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(COMPLETION);
      });
    });
  });
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
