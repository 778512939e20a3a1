import { SseScanner, num } from '../../providers/sse.js';
import { messagesUsage, nextMessagesUsage } from '../../providers/usage/messages.js';
import { chatReply, chunkStream, ChunkWriter, completion, errorBody, errorTypeForStatus, jsonOf, type FinishReason } from '../chat/reply.js';
import type { ChatToolCall } from '../chat/request.js';
import type { ReplyContext, ReplyTransform, StreamTransform } from '../types.js';

/** The Anthropic Messages API (msgvendor) → chat completions: the reply, its usage read in the same pass. */

type Block = Record<string, unknown>;

const FINISH: Readonly<Record<string, FinishReason>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};
const finishOf = (stopReason: unknown): FinishReason => FINISH[String(stopReason)] ?? 'stop';

function replyJson(ctx: ReplyContext, reply: unknown): { body: Buffer; usage: ReturnType<typeof messagesUsage> } {
  const r = (reply ?? {}) as Record<string, unknown>;
  const content = Array.isArray(r['content']) ? (r['content'] as Block[]) : [];
  let text = '';
  let reasoningText = '';
  const toolCalls: ChatToolCall[] = [];
  for (const b of content) {
    if (b['type'] === 'text' && typeof b['text'] === 'string') text += b['text'];
    else if (b['type'] === 'thinking' && typeof b['thinking'] === 'string') reasoningText += b['thinking'];
    else if (b['type'] === 'tool_use') toolCalls.push({ id: String(b['id']), name: String(b['name']), arguments: JSON.stringify(b['input'] ?? {}) });
  }
  // prompt tokens include what the cache served and stored, as OpenAI counts them
  const usage = messagesUsage(r);
  return { body: completion(ctx, typeof r['id'] === 'string' ? r['id'] : undefined, { text, toolCalls, reasoningText }, finishOf(r['stop_reason']), usage), usage };
}

function replyError(status: number, body: Buffer): Buffer {
  const e = (jsonOf(body) as { error?: { type?: unknown; message?: unknown } } | undefined)?.error;
  const message = typeof e?.message === 'string' ? e.message : body.toString('utf8');
  return errorBody(message, typeof e?.type === 'string' ? e.type : errorTypeForStatus(status));
}

/** Reads the Messages SSE stream (named events, each `data:` carrying its `type`) into chunks. */
function replyStream(ctx: ReplyContext): StreamTransform {
  const w = new ChunkWriter(ctx);
  /** content block index → tool call index */
  const tools = new Map<number, number>();
  const scanner = new SseScanner([''], (payload) => {
    if (w.ended) return;
    const e = jsonOf(Buffer.from(payload)) as Record<string, unknown> | undefined;
    if (!e) return;
    const block = e['content_block'] as Block | undefined;
    const delta = e['delta'] as Block | undefined;
    switch (e['type']) {
      case 'message_start': {
        const m = e['message'] as Record<string, unknown> | undefined;
        if (typeof m?.['id'] === 'string') w.id = m['id'];
        w.usage = nextMessagesUsage(e, w.usage) ?? w.usage;
        w.role();
        break;
      }
      case 'content_block_start':
        if (block?.['type'] === 'tool_use') {
          const index = tools.size;
          tools.set(num(e['index']), index);
          w.toolCall({ index, id: String(block['id']), name: String(block['name']), arguments: '' });
        }
        break;
      case 'content_block_delta':
        if (delta?.['type'] === 'text_delta') w.text(String(delta['text']));
        else if (delta?.['type'] === 'thinking_delta') w.reasoningText(String(delta['thinking']));
        else if (delta?.['type'] === 'input_json_delta') {
          const index = tools.get(num(e['index']));
          if (index !== undefined) w.toolCall({ index, arguments: String(delta['partial_json']) });
        }
        break;
      case 'message_delta':
        w.usage = nextMessagesUsage(e, w.usage) ?? w.usage;
        w.finish(finishOf(delta?.['stop_reason']));
        break;
      case 'error': {
        const err = e['error'] as { type?: unknown; message?: unknown } | undefined;
        w.error(String(err?.message ?? 'provider error'), String(err?.type ?? 'api_error'));
        break;
      }
    }
  });
  return chunkStream(scanner, w);
}

/** The chat-completions form of a Messages reply, whole or streamed. */
export const messagesToChatReply = (ctx: ReplyContext): ReplyTransform => chatReply({ json: (r) => replyJson(ctx, r), error: replyError, stream: () => replyStream(ctx) });
