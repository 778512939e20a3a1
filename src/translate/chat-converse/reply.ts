import type { Message } from '@smithy/eventstream-codec';
import { toUtf8 } from '@smithy/util-utf8';
import { EventStreamScanner } from '../../providers/eventstream.js';
import { num } from '../../providers/sse.js';
import type { Usage } from '../../providers/types.js';
import { converseUsage } from '../../providers/usage/converse.js';
import { chatReply, chunkStream, ChunkWriter, completion, errorBody, errorTypeForStatus, jsonOf, type FinishReason } from '../chat/reply.js';
import type { ChatToolCall } from '../chat/request.js';
import type { ReplyContext, ReplyTransform, StreamTransform } from '../types.js';

/** Bedrock Converse / ConverseStream (cloudy) → chat completions: the reply, its usage read in the same pass. */

type Block = Record<string, unknown>;

const FINISH: Readonly<Record<string, FinishReason>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  guardrail_intervened: 'content_filter',
  content_filtered: 'content_filter',
};
const finishOf = (stopReason: unknown): FinishReason => FINISH[String(stopReason)] ?? 'stop';

function replyJson(ctx: ReplyContext, reply: unknown): { body: Buffer; usage: Usage | undefined } {
  const r = (reply ?? {}) as Record<string, unknown>;
  const content = ((r['output'] as { message?: { content?: unknown } } | undefined)?.message?.content ?? []) as Block[];
  let text = '';
  const toolCalls: ChatToolCall[] = [];
  for (const b of Array.isArray(content) ? content : []) {
    if (typeof b['text'] === 'string') text += b['text'];
    const use = b['toolUse'] as Record<string, unknown> | undefined;
    if (use) toolCalls.push({ id: String(use['toolUseId']), name: String(use['name']), arguments: JSON.stringify(use['input'] ?? {}) });
  }
  // Bedrock counts cache reads and writes apart from inputTokens; OpenAI's prompt_tokens includes them (converseUsage adds them)
  const usage = converseUsage(r);
  return { body: completion(ctx, undefined, { text, toolCalls }, finishOf(r['stopReason']), usage), usage };
}

/** Bedrock names its error on x-amzn-errortype (`Name:namespace`); the body carries `message`. */
function replyError(status: number, body: Buffer, headers: Readonly<Record<string, string | string[] | undefined>>): Buffer {
  const e = jsonOf(body) as { message?: unknown; Message?: unknown } | undefined;
  const message = e?.message ?? e?.Message;
  const name = headers['x-amzn-errortype'];
  return errorBody(typeof message === 'string' ? message : body.toString('utf8'), errorTypeForStatus(status), typeof name === 'string' ? (name.split(':')[0] ?? name) : null);
}

const header = (m: Message, name: string): unknown => m.headers[name]?.value;

/** ConverseStream's binary event frames, decoded as they complete, into chunks. */
function replyStream(ctx: ReplyContext): StreamTransform {
  const w = new ChunkWriter(ctx);
  /** content block index → tool call index */
  const tools = new Map<number, number>();
  const onMessage = (m: Message) => {
    if (w.ended) return;
    const e = (jsonOf(Buffer.from(toUtf8(m.body))) ?? {}) as Record<string, unknown>;
    if (header(m, ':message-type') !== 'event') {
      w.error(String(e['message'] ?? e['Message'] ?? 'provider error'), String(header(m, ':exception-type') ?? 'api_error'));
      return;
    }
    const index = num(e['contentBlockIndex']);
    switch (header(m, ':event-type')) {
      case 'messageStart':
        w.role();
        break;
      case 'contentBlockStart': {
        const use = (e['start'] as { toolUse?: Record<string, unknown> } | undefined)?.toolUse;
        if (use) {
          tools.set(index, tools.size);
          w.toolCall({ index: tools.size - 1, id: String(use['toolUseId']), name: String(use['name']), arguments: '' });
        }
        break;
      }
      case 'contentBlockDelta': {
        const delta = (e['delta'] ?? {}) as Record<string, unknown>;
        if (typeof delta['text'] === 'string') w.text(delta['text']);
        const input = (delta['toolUse'] as { input?: unknown } | undefined)?.input;
        const call = tools.get(index);
        if (typeof input === 'string' && call !== undefined) w.toolCall({ index: call, arguments: input });
        break;
      }
      case 'messageStop':
        w.finish(finishOf(e['stopReason']));
        break;
      case 'metadata':
        w.usage = converseUsage(e) ?? w.usage;
        break;
    }
  };
  const scanner = new EventStreamScanner(() => true, onMessage);
  return chunkStream(scanner, w);
}

/** The chat-completions form of a Converse reply, whole or streamed. */
export const converseToChatReply = (ctx: ReplyContext): ReplyTransform => chatReply({ json: (r) => replyJson(ctx, r), error: replyError, stream: () => replyStream(ctx) });
