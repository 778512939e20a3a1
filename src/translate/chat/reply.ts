import type { Usage } from '../../providers/types.js';
import type { ReplyContext, ReplyTransform, StreamTransform } from '../types.js';
import type { ChatToolCall } from './request.js';

/**
 * The chat-completions reply side of every translation: chat.completion JSON
 * and chat.completion.chunk SSE events, with the usage the provider's own
 * reader finds (providers/usage/*), so what the caller is told and what the
 * gateway bills are one arithmetic, read in one pass.
 */

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

/** chat-completions `usage`; `reasoning` of the output tokens were the model's thinking */
function usageObject(u: Usage, reasoning: number): Record<string, unknown> {
  return {
    prompt_tokens: u.input_tokens,
    completion_tokens: u.output_tokens,
    total_tokens: u.input_tokens + u.output_tokens,
    prompt_tokens_details: { cached_tokens: u.cached_tokens },
    completion_tokens_details: { reasoning_tokens: reasoning },
  };
}

export interface ReplyMessage {
  text: string;
  toolCalls: ChatToolCall[];
  /** the model's reasoning text, where the vendor gives it (written only when the caller reads it: ReplyContext.reasoning) */
  reasoningText?: string;
}

const toolCallObject = (c: ChatToolCall) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } });

/** A whole chat.completion. */
export function completion(ctx: ReplyContext, id: string | undefined, msg: ReplyMessage, finish: FinishReason, usage: Usage | undefined, reasoning = 0): Buffer {
  return Buffer.from(
    JSON.stringify({
      id: id ?? ctx.fallbackId,
      object: 'chat.completion',
      created: ctx.created,
      model: ctx.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: msg.text === '' && msg.toolCalls.length > 0 ? null : msg.text,
            refusal: null,
            ...(msg.toolCalls.length > 0 && { tool_calls: msg.toolCalls.map(toolCallObject) }),
            ...(ctx.reasoning && msg.reasoningText && { reasoning_content: msg.reasoningText }),
          },
          logprobs: null,
          finish_reason: finish,
        },
      ],
      ...(usage && { usage: usageObject(usage, reasoning) }),
    }),
  );
}

/** The OpenAI error envelope around a vendor's error. */
export function errorBody(message: string, type: string, code: string | null = null): Buffer {
  return Buffer.from(JSON.stringify({ error: { message, type, param: null, code } }));
}

/** OpenAI's error type for a vendor status, where the vendor's own body names none. */
export const errorTypeForStatus = (status: number): string =>
  ({ 400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error', 429: 'rate_limit_error' })[status] ?? (status < 500 ? 'invalid_request_error' : 'api_error');

/** The vendor's body as JSON, or undefined: an error body may be anything. */
export function jsonOf(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** A streamed tool-call delta: the first carries id and name, later ones more argument text. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  name?: string;
  arguments: string;
}

/**
 * Writes chat.completion.chunk events. A translator calls it while it reads
 * one vendor chunk and takes what accumulated once the chunk is read.
 */
export class ChunkWriter {
  private out = '';
  private finished = false;
  private failed = false;
  private roleSent = false;
  id: string;
  /** the vendor's usage as its provider reads it: billed, and told to the caller */
  usage: Usage | undefined;
  /** of the output tokens, those the model spent thinking */
  reasoning = 0;

  constructor(private readonly ctx: ReplyContext) {
    this.id = ctx.fallbackId;
  }

  private chunk(delta: Record<string, unknown>, finish: FinishReason | null): void {
    const choice = { index: 0, delta, logprobs: null, finish_reason: finish };
    this.out += `data: ${JSON.stringify({ id: this.id, object: 'chat.completion.chunk', created: this.ctx.created, model: this.ctx.model, choices: [choice] })}\n\n`;
  }

  /** the first chunk: the assistant role, as OpenAI opens every stream */
  role(): void {
    if (this.roleSent) return;
    this.roleSent = true;
    this.chunk({ role: 'assistant', content: '' }, null);
  }

  text(text: string): void {
    if (text === '') return;
    this.role();
    this.chunk({ content: text }, null);
  }

  /** the model's reasoning text, written only when the caller reads it (ReplyContext.reasoning) */
  reasoningText(text: string): void {
    if (text === '' || !this.ctx.reasoning) return;
    this.role();
    this.chunk({ reasoning_content: text }, null);
  }

  toolCall(d: ToolCallDelta): void {
    this.role();
    const fn: Record<string, string> = { arguments: d.arguments };
    if (d.name !== undefined) fn['name'] = d.name;
    this.chunk({ tool_calls: [{ index: d.index, ...(d.id !== undefined && { id: d.id, type: 'function' }), function: fn }] }, null);
  }

  finish(reason: FinishReason): void {
    if (this.finished) return;
    this.role();
    this.finished = true;
    this.chunk({}, reason);
  }

  /** a vendor error in the stream: OpenAI's in-band `data: {"error":…}`, after which nothing more is written */
  error(message: string, type: string): void {
    if (this.failed) return;
    this.failed = true;
    this.out += `data: ${JSON.stringify({ error: { message, type, param: null, code: null } })}\n\n`;
  }

  /** what this vendor chunk produced */
  take(): string | undefined {
    if (this.out === '') return undefined;
    const out = this.out;
    this.out = '';
    return out;
  }

  /**
   * The vendor's stream ended: the usage chunk (when asked for) and `[DONE]`
   * after a finished reply; an error event when the reply stopped short, so a
   * cut stream never looks complete.
   */
  end(): string | undefined {
    if (!this.failed && !this.finished) this.error('the provider ended the stream before the reply was complete', 'api_error');
    if (!this.failed) {
      if (this.ctx.includeUsage && this.usage) {
        this.out += `data: ${JSON.stringify({ id: this.id, object: 'chat.completion.chunk', created: this.ctx.created, model: this.ctx.model, choices: [], usage: usageObject(this.usage, this.reasoning) })}\n\n`;
      }
      this.out += 'data: [DONE]\n\n';
    }
    return this.take();
  }

  get ended(): boolean {
    return this.failed;
  }
}

/** The reply side of a translation: every target answers in chat-completions JSON and SSE. */
export const chatReply = (r: Omit<ReplyTransform, 'streamContentType'>): ReplyTransform => ({ streamContentType: 'text/event-stream; charset=utf-8', ...r });

/** A stream transform from a scanner of the vendor's framing that feeds `w` as it reads. */
export const chunkStream = (scanner: { push(chunk: Buffer): void }, w: ChunkWriter): StreamTransform => ({
  push(chunk) {
    scanner.push(chunk);
    return w.take();
  },
  end: () => w.end(),
  usage: () => w.usage,
});
