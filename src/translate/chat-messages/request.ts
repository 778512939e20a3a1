import { jsonWithArray, TurnWriter, type JsonText } from '../chat/body-writer.js';
import { bad, eachMessage, parsedArguments, readChatCall, systemTexts, THINKING_BUDGET, type ChatCall, type ChatPart, type ReasoningEffort } from '../chat/request.js';
import type { ChatRequest, TranslatedRequest } from '../types.js';

/** Chat completions → the Anthropic Messages API (msgvendor): the request. */

const ANTHROPIC_VERSION = '2023-06-01';

type Block = Record<string, unknown>;

function contentBlock(p: ChatPart): Block {
  if (p.kind === 'text') return { type: 'text', text: p.text };
  if (p.kind === 'image') return { type: 'image', source: { type: 'base64', media_type: p.mediaType, data: p.data } };
  return { type: 'image', source: { type: 'url', url: p.url } };
}

/** The conversation's turns, written as each message is read; a user turn's tool results go first. */
function writeTurns(call: ChatCall, out: JsonText): void {
  const turns = new TurnWriter<'user' | 'assistant'>(out, 'content');
  eachMessage(call, (m, i) => {
    switch (m.role) {
      case 'system':
        return;
      case 'user':
        turns.message('user');
        for (const p of m.parts) turns.block(contentBlock(p));
        return;
      case 'tool':
        turns.message('user');
        turns.block({ type: 'tool_result', tool_use_id: m.toolCallId, content: m.text }, true);
        return;
      case 'assistant':
        turns.message('assistant');
        for (const p of m.parts) turns.block(contentBlock(p));
        m.toolCalls.forEach((c, j) => turns.block({ type: 'tool_use', id: c.id, name: c.name, input: parsedArguments(c, `messages[${i}].tool_calls[${j}].function.arguments`) }));
    }
  });
  turns.end();
}

function toolChoice(call: ChatCall): Block | undefined {
  const c = call.toolChoice;
  const parallel = call.parallelToolCalls ? {} : { disable_parallel_tool_use: true };
  if (!c) return call.parallelToolCalls || call.tools.length === 0 ? undefined : { type: 'auto', ...parallel };
  if (c.kind === 'none') return { type: 'none' };
  if (c.kind === 'function') return { type: 'tool', name: c.name, ...parallel };
  return { type: c.kind === 'required' ? 'any' : 'auto', ...parallel };
}

/** The Messages request body of a chat-completions call, its turns written as they are read. */
function messagesBody(call: ChatCall, defaultMaxTokens: number, out: JsonText): Buffer {
  const system = systemTexts(call);
  const choice = toolChoice(call);
  const head = {
    model: call.model,
    max_tokens: call.maxTokens ?? defaultMaxTokens,
    ...(system.length > 0 && { system: system.map((text) => ({ type: 'text', text })) }),
  };
  const tail = {
    ...(call.tools.length > 0 && { tools: call.tools.map((t) => ({ name: t.name, ...(t.description !== undefined && { description: t.description }), input_schema: t.parameters })) }),
    ...(choice && { tool_choice: choice }),
    ...(call.temperature !== undefined && { temperature: call.temperature }),
    ...(call.topP !== undefined && { top_p: call.topP }),
    ...(call.stop.length > 0 && { stop_sequences: call.stop }),
    ...(call.user !== undefined && { metadata: { user_id: call.user } }),
    ...(call.stream && { stream: true }),
    ...(call.reasoningEffort && { thinking: thinking(call.reasoningEffort, call.maxTokens ?? defaultMaxTokens) }),
  };
  return jsonWithArray(head, 'messages', (text) => writeTurns(call, text), tail, out);
}

/** Anthropic's extended thinking: a budget of at least 1024 tokens, below max_tokens. */
function thinking(effort: ReasoningEffort, maxTokens: number): Block {
  const floor = THINKING_BUDGET.minimal;
  if (maxTokens <= floor) throw bad('max_tokens', `thinking (reasoning_effort) needs max_tokens above ${floor}`);
  return { type: 'enabled', budget_tokens: Math.min(THINKING_BUDGET[effort], maxTokens - 1) };
}

/** A chat-completions call as a Messages call; `defaultMaxTokens` where the caller sets no limit (the vendor requires one); `out` the text its body is written into. */
export function chatToMessagesRequest(body: ChatRequest, defaultMaxTokens: number, out: JsonText): TranslatedRequest {
  const call = readChatCall(body, 'msgvendor');
  return {
    operation: { op: 'messages', model: call.model, stream: call.stream, query: '' },
    body: messagesBody(call, defaultMaxTokens, out),
    headers: { 'anthropic-version': ANTHROPIC_VERSION },
  };
}
