import { costUsd, pricedModel } from '../providers/catalog.js';
import { SseScanner, num } from '../providers/sse.js';
import type { ProviderId, Usage } from '../providers/types.js';
import { openaiReplyUsage } from '../providers/usage/openai.js';
import { readVendorError } from '../providers/vendor-error.js';
import type { ExecuteRequest } from '../surfaces/execute-schema.js';
import type { ChatRequest, ReplyTransform, StreamTransform } from './types.js';

/**
 * /v1/execute ⇄ chat completions. The execute envelope becomes a
 * chat-completions body (sent as it is to OpenAI, or through the chat
 * translators to any other vendor), and the chat-completions reply, whole or
 * streamed, becomes the execution object or its typed SSE events.
 */

/** What the reply needs to know about the call it answers. */
export interface ExecutionContext {
  /** x-gw-request-id */
  id: string;
  /** unix seconds */
  created: number;
  /** the model that served the call (the one asked for, or a fallback) */
  model: string;
  provider: ProviderId;
  /** `trace` as it stands when the reply is written, with the reply's usage where it is known then */
  trace(usage: Usage | undefined): Record<string, unknown>;
}

/** A chat-completions body for one candidate model. */
export function chatBodyOf(req: ExecuteRequest, model: string): ChatRequest {
  const x = req.execution ?? {};
  const { messages, tools, tool_choice: toolChoice } = req.input;
  return {
    model,
    messages,
    ...(tools !== undefined && { tools }),
    ...(toolChoice !== undefined && { tool_choice: toolChoice }),
    ...(x.max_tokens !== undefined && { max_completion_tokens: x.max_tokens }),
    ...(x.temperature !== undefined && { temperature: x.temperature }),
    ...(x.top_p !== undefined && { top_p: x.top_p }),
    ...(x.stop !== undefined && { stop: x.stop }),
    ...(x.reasoning !== undefined && { reasoning_effort: x.reasoning.effort }),
    // the usage rides in the last chunk only when asked for
    ...(x.stream === true && { stream: true, stream_options: { include_usage: true } }),
  };
}

/** Where a chat-completions field the translators name sits in the execute envelope. */
const ENVELOPE_FIELDS: ReadonlyArray<[RegExp, string]> = [
  [/^(messages|tools|tool_choice)\b/, 'input.$1'],
  [/^(max_tokens|max_completion_tokens)$/, 'execution.max_tokens'],
  [/^(temperature|top_p|stop)$/, 'execution.$1'],
  [/^reasoning_effort$/, 'execution.reasoning.effort'],
  [/^model$/, 'target.model'],
];

/** `messages[2].content[0]` → `input.messages.2.content.0`. */
export function envelopeField(chatField: string): string {
  for (const [from, to] of ENVELOPE_FIELDS) if (from.test(chatField)) return chatField.replace(from, to).replace(/\[(\d+)\]/g, '.$1');
  return chatField;
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : undefined);

interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

interface Output {
  content: string;
  reasoning: string;
  toolCalls: ToolCall[];
  finish: string | null;
  /** the vendor's usage as its provider reads it: what the call is billed */
  usage: Usage | undefined;
}

/** reasoning text as OpenAI-compatible servers and the chat translators give it */
const reasoningOf = (m: Json | undefined): string => {
  const r = m?.['reasoning_content'] ?? m?.['reasoning'];
  return typeof r === 'string' ? r : '';
};

function executionObject(ctx: ExecutionContext, out: Output): Json {
  const u = out.usage;
  return {
    id: ctx.id,
    object: 'execution',
    created: ctx.created,
    model: ctx.model,
    provider: ctx.provider,
    output: {
      role: 'assistant',
      content: out.content,
      ...(out.toolCalls.length > 0 && { tool_calls: out.toolCalls }),
      ...(out.reasoning !== '' && { reasoning: out.reasoning }),
    },
    finish_reason: out.finish,
    // the figures accounting charges: the same usage, priced the same way
    usage: {
      tokens_in: u?.input_tokens ?? 0,
      tokens_out: u?.output_tokens ?? 0,
      tokens_cached: u?.cached_tokens ?? 0,
      cost_usd: costUsd(pricedModel(ctx.model, u), u, ctx.provider),
    },
    trace: ctx.trace(u),
  };
}

/** A whole chat.completion as what the execution object reads of it; `usage` as the vendor's provider read it. */
function outputOf(chat: unknown, usage: Usage | undefined): Output {
  const c = obj(chat);
  const choice = Array.isArray(c?.['choices']) ? obj(c['choices'][0]) : undefined;
  const m = obj(choice?.['message']);
  const calls = Array.isArray(m?.['tool_calls']) ? (m['tool_calls'] as unknown[]) : [];
  return {
    content: typeof m?.['content'] === 'string' ? m['content'] : '',
    reasoning: reasoningOf(m),
    toolCalls: calls.flatMap((t) => {
      const f = obj(obj(t)?.['function']);
      return f ? [{ id: String(obj(t)?.['id'] ?? ''), type: 'function' as const, function: { name: String(f['name'] ?? ''), arguments: String(f['arguments'] ?? '') } }] : [];
    }),
    finish: typeof choice?.['finish_reason'] === 'string' ? choice['finish_reason'] : null,
    usage,
  };
}

const sse = (event: string, data: unknown): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** The typed stream's terminal error event, `{error:{message, type, code}}`. */
export const errorEvent = (message: string, type: string, code: number): string => sse('error', { error: { message, type, code } });

/** a failure inside a vendor's stream has no HTTP status of its own: it reads as the bad gateway it is */
const MID_STREAM_STATUS = 502;

/**
 * chat.completion.chunk events in, execution events out: `execution.started`
 * once, an `output.delta` per chunk that carries output, `execution.completed`
 * with the whole reply at `[DONE]`, or `error` when the vendor reports one or
 * the stream stops short. Only the reply's parts are kept, never the stream.
 */
class ExecutionStream implements StreamTransform {
  private out = '';
  private started = false;
  private done = false;
  private readonly acc: Output = { content: '', reasoning: '', toolCalls: [], finish: null, usage: undefined };
  private readonly scanner = new SseScanner(['data:'], (payload) => this.event(payload));

  constructor(
    private readonly ctx: ExecutionContext,
    private readonly inner: StreamTransform | undefined,
  ) {}

  push(chunk: Buffer): string | undefined {
    this.start();
    const chat = this.inner ? this.inner.push(chunk) : chunk;
    if (chat !== undefined) this.scanner.push(typeof chat === 'string' ? Buffer.from(chat) : chat);
    return this.take();
  }

  end(): string | undefined {
    this.start();
    const last = this.inner?.end();
    if (last !== undefined) this.scanner.push(Buffer.from(last));
    // OpenAI ends with [DONE]; a stream that stopped short never looks complete
    if (!this.done) this.fail('the provider ended the stream before the reply was complete', 'upstream_truncated');
    return this.take();
  }

  usage(): Usage | undefined {
    return this.inner ? this.inner.usage() : this.acc.usage;
  }

  private start(): void {
    if (this.started) return;
    this.started = true;
    this.out += sse('execution.started', { id: this.ctx.id, model: this.ctx.model, provider: this.ctx.provider });
  }

  private take(): string | undefined {
    const out = this.out;
    this.out = '';
    return out === '' ? undefined : out;
  }

  private fail(message: string, type: string): void {
    this.done = true;
    this.out += errorEvent(message, type, MID_STREAM_STATUS);
  }

  private event(payload: string): void {
    if (this.done) return;
    if (payload === '[DONE]') {
      this.done = true;
      this.out += sse('execution.completed', executionObject(this.ctx, { ...this.acc, usage: this.usage() }));
      return;
    }
    let e: Json | undefined;
    try {
      e = obj(JSON.parse(payload));
    } catch {
      return;
    }
    if (!e) return;
    const err = obj(e['error']);
    if (err) return this.fail(String(err['message'] ?? 'provider error'), String(err['type'] ?? err['status'] ?? 'api_error'));
    // OpenAI's own chunks (a translated stream's usage is its translator's)
    if (!this.inner && obj(e['usage'])) this.acc.usage = openaiReplyUsage(e);
    const choice = Array.isArray(e['choices']) ? obj(e['choices'][0]) : undefined;
    if (!choice) return;
    if (typeof choice['finish_reason'] === 'string') this.acc.finish = choice['finish_reason'];
    this.delta(obj(choice['delta']));
  }

  private delta(d: Json | undefined): void {
    if (!d) return;
    const delta: Json = {};
    if (typeof d['content'] === 'string' && d['content'] !== '') {
      delta['content'] = d['content'];
      this.acc.content += d['content'];
    }
    const reasoning = reasoningOf(d);
    if (reasoning !== '') {
      delta['reasoning'] = reasoning;
      this.acc.reasoning += reasoning;
    }
    const calls = Array.isArray(d['tool_calls']) ? (d['tool_calls'] as unknown[]) : [];
    if (calls.length > 0) delta['tool_calls'] = calls.map((c) => this.toolCall(obj(c) ?? {}));
    if (Object.keys(delta).length > 0) this.out += sse('output.delta', delta);
  }

  /** one streamed tool-call fragment: folded into the reply, and passed on in the execute shape */
  private toolCall(c: Json): Json {
    const index = num(c['index']);
    const f = obj(c['function']) ?? {};
    const call = (this.acc.toolCalls[index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
    const out: Json = { index };
    if (typeof c['id'] === 'string') out['id'] = call.id = c['id'];
    if (typeof f['name'] === 'string') out['name'] = call.function.name = f['name'];
    if (typeof f['arguments'] === 'string' && f['arguments'] !== '') {
      out['arguments'] = f['arguments'];
      call.function.arguments += f['arguments'];
    }
    return out;
  }
}

/**
 * The reply side of /v1/execute. `inner` is the chat translation of a
 * non-OpenAI vendor (its reply read back into chat completions first); a
 * vendor error is read from the vendor's own bytes and answered in the shared
 * envelope with the vendor's status, type and message.
 */
export function executionReply(ctx: ExecutionContext, inner: ReplyTransform | undefined): ReplyTransform {
  return {
    streamContentType: 'text/event-stream; charset=utf-8',
    json(reply) {
      const chat = inner?.json(reply);
      const usage = chat ? chat.usage : openaiReplyUsage(reply);
      const out = outputOf(chat ? JSON.parse(chat.body.toString('utf8')) : reply, usage);
      return { body: Buffer.from(JSON.stringify(executionObject(ctx, out))), usage };
    },
    error(status, body, headers) {
      const { type, message } = readVendorError(status, body, headers);
      return Buffer.from(JSON.stringify({ error: { message, type, code: status } }));
    },
    stream: () => new ExecutionStream(ctx, inner?.stream()),
    replay: (stored) => replayed(ctx, stored),
  };
}

/** what a reply served from the cache cost: nothing */
const NO_USAGE = { tokens_in: 0, tokens_out: 0, tokens_cached: 0, cost_usd: 0 };

/** An execution object's per-call fields made this request's: its id and time, no cost, and its own trace (served by the cache). */
function freshened(ctx: ExecutionContext, e: Json): Json {
  const out: Json = { ...e, id: ctx.id };
  if ('created' in e) out['created'] = ctx.created;
  if ('usage' in e) out['usage'] = NO_USAGE;
  if ('trace' in e) out['trace'] = ctx.trace(undefined);
  return out;
}

/**
 * A stored execution object, or one event of a stored execution stream
 * (`execution.started`, `execution.completed`; the deltas are as stored), as
 * this request's.
 */
function replayed(ctx: ExecutionContext, stored: Buffer): Buffer {
  const text = stored.toString('utf8');
  const event = /^event: (execution\.started|execution\.completed)\ndata: (.*)\n\n$/s.exec(text);
  try {
    if (event) return Buffer.from(sse(event[1] as string, freshened(ctx, JSON.parse(event[2] as string) as Json)));
    if (text.startsWith('{')) return Buffer.from(JSON.stringify(freshened(ctx, JSON.parse(text) as Json)));
  } catch {
    // not an execution object after all: served as stored
  }
  return stored;
}
