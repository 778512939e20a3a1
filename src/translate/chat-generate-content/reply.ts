import { SseScanner, num } from '../../providers/sse.js';
import type { Usage } from '../../providers/types.js';
import { generateContentUsage } from '../../providers/usage/generate-content.js';
import { chatReply, chunkStream, ChunkWriter, completion, errorBody, errorTypeForStatus, jsonOf, type FinishReason } from '../chat/reply.js';
import type { ChatToolCall } from '../chat/request.js';
import type { ReplyContext, ReplyTransform, StreamTransform } from '../types.js';

/** Gemini generateContent (genvendor) → chat completions: the reply, its usage read in the same pass. */

type Part = Record<string, unknown>;

const FINISH: Readonly<Record<string, FinishReason>> = {
  STOP: 'stop',
  MAX_TOKENS: 'length',
  SAFETY: 'content_filter',
  RECITATION: 'content_filter',
  BLOCKLIST: 'content_filter',
  PROHIBITED_CONTENT: 'content_filter',
  SPII: 'content_filter',
  IMAGE_SAFETY: 'content_filter',
};
const finishOf = (reason: unknown, calledTools: boolean): FinishReason => (calledTools ? 'tool_calls' : (FINISH[String(reason)] ?? 'stop'));

/** the thinking share of the output tokens (generateContentUsage bills it as output) */
const thoughtsOf = (r: Record<string, unknown>): number => num((r['usageMetadata'] as Record<string, unknown> | undefined)?.['thoughtsTokenCount']);

interface Candidate {
  parts: Part[];
  finishReason: unknown;
}

/** The first candidate of a response (a prompt blocked outright has none: a content filter stop). */
function candidate(r: Record<string, unknown>): Candidate {
  const c = (Array.isArray(r['candidates']) ? r['candidates'][0] : undefined) as Record<string, unknown> | undefined;
  const blocked = (r['promptFeedback'] as Record<string, unknown> | undefined)?.['blockReason'];
  const parts = (c?.['content'] as { parts?: unknown } | undefined)?.parts;
  return { parts: Array.isArray(parts) ? (parts as Part[]) : [], finishReason: c?.['finishReason'] ?? (blocked !== undefined ? 'SAFETY' : undefined) };
}

/** Text, reasoning (the thought parts) and tool calls of a candidate's parts. */
function read(parts: Part[], idBase: string, firstIndex: number): { text: string; reasoningText: string; calls: ChatToolCall[] } {
  let text = '';
  let reasoningText = '';
  const calls: ChatToolCall[] = [];
  for (const p of parts) {
    if (p['thought'] === true) {
      if (typeof p['text'] === 'string') reasoningText += p['text'];
      continue;
    }
    if (typeof p['text'] === 'string') text += p['text'];
    const fc = p['functionCall'] as Record<string, unknown> | undefined;
    if (fc) {
      const id = typeof fc['id'] === 'string' ? fc['id'] : `call_${idBase}_${firstIndex + calls.length}`;
      calls.push({ id, name: String(fc['name']), arguments: JSON.stringify(fc['args'] ?? {}) });
    }
  }
  return { text, reasoningText, calls };
}

function replyJson(ctx: ReplyContext, reply: unknown): { body: Buffer; usage: Usage | undefined } {
  const r = (reply ?? {}) as Record<string, unknown>;
  const id = typeof r['responseId'] === 'string' ? r['responseId'] : undefined;
  const c = candidate(r);
  const { text, reasoningText, calls } = read(c.parts, id ?? ctx.fallbackId, 0);
  const usage = generateContentUsage(r);
  return { body: completion(ctx, id, { text, toolCalls: calls, reasoningText }, finishOf(c.finishReason, calls.length > 0), usage, thoughtsOf(r)), usage };
}

function replyError(status: number, body: Buffer): Buffer {
  const e = (jsonOf(body) as { error?: { message?: unknown; status?: unknown } } | undefined)?.error;
  return errorBody(typeof e?.message === 'string' ? e.message : body.toString('utf8'), errorTypeForStatus(status), typeof e?.status === 'string' ? e.status : null);
}

/** Each SSE event is a whole GenerateContentResponse: its parts are the delta, its usage cumulative. */
function replyStream(ctx: ReplyContext): StreamTransform {
  const w = new ChunkWriter(ctx);
  let calls = 0;
  const scanner = new SseScanner([''], (payload) => {
    if (w.ended) return;
    const r = jsonOf(Buffer.from(payload)) as Record<string, unknown> | undefined;
    if (!r) return;
    const err = r['error'] as { message?: unknown; status?: unknown } | undefined;
    if (err) return w.error(String(err.message ?? 'provider error'), typeof err.status === 'string' ? err.status : 'api_error');
    if (typeof r['responseId'] === 'string') w.id = r['responseId'];
    const usage = generateContentUsage(r);
    if (usage) {
      w.usage = usage;
      w.reasoning = thoughtsOf(r);
    }
    const c = candidate(r);
    const { text, reasoningText, calls: found } = read(c.parts, w.id, calls);
    w.role();
    w.reasoningText(reasoningText);
    w.text(text);
    for (const call of found) w.toolCall({ index: calls++, id: call.id, name: call.name, arguments: call.arguments });
    if (c.finishReason !== undefined) w.finish(finishOf(c.finishReason, calls > 0));
  });
  return chunkStream(scanner, w);
}

/** The chat-completions form of a generateContent reply, whole or streamed. */
export const generateContentToChatReply = (ctx: ReplyContext): ReplyTransform => chatReply({ json: (r) => replyJson(ctx, r), error: replyError, stream: () => replyStream(ctx) });
