import { SseScanner, num } from '../providers/sse.js';
import { messagesUsage } from '../providers/usage/messages.js';
import {
  alternate,
  bad,
  chatReply,
  chatUsageFrom,
  chunkStream,
  ChunkWriter,
  completion,
  errorBody,
  errorTypeForStatus,
  jsonOf,
  parsedArguments,
  readChatCall,
  systemTexts,
  THINKING_BUDGET,
  type ChatCall,
  type ChatPart,
  type ChatToolCall,
  type ChatUsage,
  type FinishReason,
  type ReasoningEffort,
} from './chat.js';
import type { ChatRequest, ReplyContext, StreamTransform, TranslatedCall } from './types.js';

/** Chat completions ⇄ the Anthropic Messages API (msgvendor). */

const ANTHROPIC_VERSION = '2023-06-01';

type Block = Record<string, unknown>;

function contentBlock(p: ChatPart): Block {
  if (p.kind === 'text') return { type: 'text', text: p.text };
  if (p.kind === 'image') return { type: 'image', source: { type: 'base64', media_type: p.mediaType, data: p.data } };
  return { type: 'image', source: { type: 'url', url: p.url } };
}

type Turn = { role: 'user' | 'assistant'; blocks: Block[] };

function turns(call: ChatCall): Turn[] {
  return alternate(
    call.messages.flatMap((m, i): Turn[] => {
      switch (m.role) {
        case 'system':
          return [];
        case 'user':
          return [{ role: 'user', blocks: m.parts.map(contentBlock) }];
        case 'tool':
          return [{ role: 'user', blocks: [{ type: 'tool_result', tool_use_id: m.toolCallId, content: m.text }] }];
        case 'assistant':
          return [
            {
              role: 'assistant',
              blocks: [
                ...m.parts.map(contentBlock),
                ...m.toolCalls.map((c, j) => ({ type: 'tool_use', id: c.id, name: c.name, input: parsedArguments(c, `messages[${i}].tool_calls[${j}].function.arguments`) })),
              ],
            },
          ];
      }
    }),
  );
}

/** Anthropic wants a user turn's tool results before its other content. */
const toolResultsFirst = (blocks: Block[]): Block[] => [...blocks.filter((b) => b.type === 'tool_result'), ...blocks.filter((b) => b.type !== 'tool_result')];

function toolChoice(call: ChatCall): Block | undefined {
  const c = call.toolChoice;
  const parallel = call.parallelToolCalls ? {} : { disable_parallel_tool_use: true };
  if (!c) return call.parallelToolCalls || call.tools.length === 0 ? undefined : { type: 'auto', ...parallel };
  if (c.kind === 'none') return { type: 'none' };
  if (c.kind === 'function') return { type: 'tool', name: c.name, ...parallel };
  return { type: c.kind === 'required' ? 'any' : 'auto', ...parallel };
}

/** The Messages request body of a chat-completions call. */
function messagesRequest(call: ChatCall, defaultMaxTokens: number): Record<string, unknown> {
  const system = systemTexts(call.messages);
  const choice = toolChoice(call);
  return {
    model: call.model,
    max_tokens: call.maxTokens ?? defaultMaxTokens,
    ...(system.length > 0 && { system: system.map((text) => ({ type: 'text', text })) }),
    messages: turns(call).map((t) => ({ role: t.role, content: t.role === 'user' ? toolResultsFirst(t.blocks) : t.blocks })),
    ...(call.tools.length > 0 && { tools: call.tools.map((t) => ({ name: t.name, ...(t.description !== undefined && { description: t.description }), input_schema: t.parameters })) }),
    ...(choice && { tool_choice: choice }),
    ...(call.temperature !== undefined && { temperature: call.temperature }),
    ...(call.topP !== undefined && { top_p: call.topP }),
    ...(call.stop.length > 0 && { stop_sequences: call.stop }),
    ...(call.user !== undefined && { metadata: { user_id: call.user } }),
    ...(call.stream && { stream: true }),
    ...(call.reasoningEffort && { thinking: thinking(call.reasoningEffort, call.maxTokens ?? defaultMaxTokens) }),
  };
}

/** Anthropic's extended thinking: a budget of at least 1024 tokens, below max_tokens. */
function thinking(effort: ReasoningEffort, maxTokens: number): Block {
  const floor = THINKING_BUDGET.minimal;
  if (maxTokens <= floor) throw bad('max_tokens', `thinking (reasoning_effort) needs max_tokens above ${floor}`);
  return { type: 'enabled', budget_tokens: Math.min(THINKING_BUDGET[effort], maxTokens - 1) };
}

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

/** Prompt tokens include what the cache served and stored, as OpenAI counts them. */
function usageOf(u: unknown, outputSoFar = 0): ChatUsage | undefined {
  const usage = chatUsageFrom(typeof u === 'object' && u !== null ? messagesUsage({ usage: u }) : undefined);
  return usage && { ...usage, completion: usage.completion || outputSoFar };
}

function replyJson(ctx: ReplyContext, reply: unknown): Buffer {
  const r = (reply ?? {}) as Record<string, unknown>;
  const content = Array.isArray(r['content']) ? (r['content'] as Block[]) : [];
  let text = '';
  let reasoning = '';
  const toolCalls: ChatToolCall[] = [];
  for (const b of content) {
    if (b['type'] === 'text' && typeof b['text'] === 'string') text += b['text'];
    else if (b['type'] === 'thinking' && typeof b['thinking'] === 'string') reasoning += b['thinking'];
    else if (b['type'] === 'tool_use') toolCalls.push({ id: String(b['id']), name: String(b['name']), arguments: JSON.stringify(b['input'] ?? {}) });
  }
  return completion(ctx, typeof r['id'] === 'string' ? r['id'] : undefined, { text, toolCalls, reasoning }, finishOf(r['stop_reason']), usageOf(r['usage']));
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
  let input: ChatUsage | undefined;
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
        input = usageOf(m?.['usage']);
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
        else if (delta?.['type'] === 'thinking_delta') w.reasoning(String(delta['thinking']));
        else if (delta?.['type'] === 'input_json_delta') {
          const index = tools.get(num(e['index']));
          if (index !== undefined) w.toolCall({ index, arguments: String(delta['partial_json']) });
        }
        break;
      case 'message_delta': {
        const out = usageOf(e['usage']);
        w.usage = input && { ...input, completion: out?.completion ?? input.completion };
        w.finish(finishOf(delta?.['stop_reason']));
        break;
      }
      case 'error': {
        const err = e['error'] as { type?: unknown; message?: unknown } | undefined;
        w.error(String(err?.message ?? 'provider error'), String(err?.type ?? 'api_error'));
        break;
      }
    }
  });
  return chunkStream(scanner, w);
}

/** A chat-completions call as a Messages call, and its reply back. */
export function toMessages(body: ChatRequest, ctx: ReplyContext, defaultMaxTokens: number): TranslatedCall {
  const call = readChatCall(body, 'msgvendor');
  const reply = chatReply({ json: (r) => replyJson(ctx, r), error: replyError, stream: () => replyStream(ctx) });
  return {
    provider: 'msgvendor',
    path: '/v1/messages',
    body: Buffer.from(JSON.stringify(messagesRequest(call, defaultMaxTokens))),
    headers: { 'anthropic-version': ANTHROPIC_VERSION },
    reply,
  };
}
