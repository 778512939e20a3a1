import { scriptOf, writeScriptedStream } from './scripted-stream.js';
import { sendJson, sleep, startFakeVendor, type FakeVendor } from './server.js';

/**
 * A fake Gemini API speaking its real wire format on both hostings: the
 * developer API (`/v1beta/models/{model}:{method}`) and Vertex
 * (`/v1/projects/{p}/locations/{l}/publishers/google/models/{model}:{method}`).
 * Streams are SSE `data: {...}\r\n\r\n` chunks (with `alt=sse`). Replies carry a
 * `thought` part and a `thoughtSignature`. Behaviour is scripted by the model name:
 * - `error_<status>`: Google's `{error:{code,message,status}}` with that status
 * - `truncated`: 200 with a body cut mid-JSON
 * - `slow_<ms>`: waits before answering
 * - `stall_stream`: streams one chunk, then goes silent
 * - `break_stream`: streams two chunks, then drops the connection
 * - a catalog name ending in `-error_<status>` or `-<script>` behaves like the bare script (a call routed here by translation)
 * - a name ending in `-tool_call`: the reply calls `get_weather` (a functionCall part)
 */
export async function startFakeGemini(): Promise<FakeVendor> {
  return startFakeVendor(async (req, res) => {
    const m = /^\/(?:v1beta|v1\/projects\/[^/]+\/locations\/[^/]+\/publishers\/google)\/models\/([^/:?]+):(generateContent|streamGenerateContent)(?:\?(.*))?$/.exec(req.url);
    if (!m) return sendJson(res, 404, googleError(404, `Method not found: ${req.url}`));
    const [, model = '', method, query = ''] = m;
    const slow = /^slow_(\d+)$/.exec(model);
    if (slow) await sleep(Number(slow[1]));
    const err = /(?:^|-)error_(\d{3})$/.exec(model);
    if (err) return sendJson(res, Number(err[1]), googleError(Number(err[1]), `scripted ${err[1]}`));
    if (scriptOf(model) === 'truncated') {
      res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
      return void res.end('{"candidates": [{"content": {"parts": [{"te');
    }
    if (model.endsWith('-tool_call')) {
      const reply = geminiToolCallReply(model);
      if (method === 'generateContent') return sendJson(res, 200, reply);
      return writeScriptedStream(res, model, { 'content-type': 'text/event-stream' }, [`data: ${JSON.stringify(reply)}\r\n\r\n`]);
    }
    if (method === 'generateContent') return sendJson(res, 200, geminiReply(model), { 'x-goog-fake': 'generate' });
    if (new URLSearchParams(query).get('alt') !== 'sse') return sendJson(res, 400, googleError(400, 'this fake streams only with alt=sse'));
    return writeScriptedStream(res, model, { 'content-type': 'text/event-stream', 'x-goog-fake': 'stream' }, geminiStreamChunks(model));
  });
}

const STATUS: Record<number, string> = { 400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 429: 'RESOURCE_EXHAUSTED', 500: 'INTERNAL', 503: 'UNAVAILABLE' };

export const googleError = (code: number, message: string) => ({ error: { code, message, status: STATUS[code] ?? 'UNKNOWN' } });

export const THOUGHT_SIGNATURE = 'CiQB0e2Kb3Rmakes1gnatureBytesAAAA==';

export function geminiReply(model: string) {
  return {
    candidates: [
      {
        content: {
          parts: [
            { text: 'Weighing a greeting.', thought: true },
            { text: 'Hello from the fake.', thoughtSignature: THOUGHT_SIGNATURE },
          ],
          role: 'model',
        },
        finishReason: 'STOP',
        index: 0,
      },
    ],
    usageMetadata: { promptTokenCount: 12, candidatesTokenCount: 5, totalTokenCount: 20, thoughtsTokenCount: 3, cachedContentTokenCount: 2 },
    modelVersion: model,
    responseId: 'fake-response-1',
  };
}

/** The SSE chunks of a streamed reply, exactly as the fake writes them. */
export function geminiStreamChunks(model: string): string[] {
  const chunk = (parts: unknown[], candidatesTokenCount: number, finishReason?: string) =>
    `data: ${JSON.stringify({
      candidates: [{ content: { parts, role: 'model' }, ...(finishReason && { finishReason }), index: 0 }],
      usageMetadata: { promptTokenCount: 12, candidatesTokenCount, totalTokenCount: 12 + candidatesTokenCount + 3, thoughtsTokenCount: 3 },
      modelVersion: model,
      responseId: 'fake-response-2',
    })}\r\n\r\n`;
  return [
    chunk([{ text: 'Weighing a greeting.', thought: true }], 0),
    chunk([{ text: 'Hello', thoughtSignature: THOUGHT_SIGNATURE }], 1),
    chunk([{ text: ' from the' }], 3),
    chunk([{ text: ' fake.' }], 4, 'STOP'),
  ];
}

export const GEMINI_CALL = { name: 'get_weather', args: { city: 'Paris' } };

/** A reply that calls a function: a text part, then the functionCall part. */
export function geminiToolCallReply(model: string) {
  return {
    candidates: [{ content: { parts: [{ text: 'Checking.' }, { functionCall: GEMINI_CALL, thoughtSignature: THOUGHT_SIGNATURE }], role: 'model' }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 30, candidatesTokenCount: 8, totalTokenCount: 38 },
    modelVersion: model,
    responseId: 'fake-response-tool',
  };
}
