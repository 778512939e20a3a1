import { isModelPathSegment } from '../providers/adapter.js';
import { SseScanner, num } from '../providers/sse.js';
import { generateContentUsage } from '../providers/usage/generate-content.js';
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
  toolNamesById,
  type ChatCall,
  type ChatPart,
  type ChatToolCall,
  type ChatUsage,
  type FinishReason,
} from './chat.js';
import type { ChatRequest, ReplyContext, StreamTransform, TranslatedCall } from './types.js';

/** Chat completions ⇄ Gemini generateContent (genvendor). */

type Part = Record<string, unknown>;
type Turn = { role: 'user' | 'model'; blocks: Part[] };

/** a model name as one path segment: nothing that could reshape the vendor path */

function part(p: ChatPart, field: string): Part {
  if (p.kind === 'text') return { text: p.text };
  if (p.kind === 'image') return { inlineData: { mimeType: p.mediaType, data: p.data } };
  throw bad(field, 'genvendor takes images inline: send a data: URL');
}

/** A tool result as the object functionResponse.response must be: the result's JSON object, or the text under `result`. */
function responseObject(text: string): Record<string, unknown> {
  const v = jsonOf(Buffer.from(text));
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : { result: text };
}

function contents(call: ChatCall): Array<{ role: Turn['role']; parts: Part[] }> {
  const names = toolNamesById(call.messages);
  const turns = call.messages.flatMap((m, i): Turn[] => {
    const field = `messages[${i}]`;
    switch (m.role) {
      case 'system':
        return [];
      case 'user':
        return [{ role: 'user', blocks: m.parts.map((p, j) => part(p, `${field}.content[${j}]`)) }];
      case 'assistant':
        return [
          {
            role: 'model',
            blocks: [
              ...m.parts.map((p, j) => part(p, `${field}.content[${j}]`)),
              ...m.toolCalls.map((c, j) => ({ functionCall: { name: c.name, args: parsedArguments(c, `${field}.tool_calls[${j}].function.arguments`) } })),
            ],
          },
        ];
      case 'tool': {
        const name = names.get(m.toolCallId);
        if (name === undefined) throw bad(`${field}.tool_call_id`, `no earlier assistant tool call has id ${JSON.stringify(m.toolCallId)}`);
        return [{ role: 'user', blocks: [{ functionResponse: { name, response: responseObject(m.text) } }] }];
      }
    }
  });
  return alternate(turns).map((t) => ({ role: t.role, parts: t.blocks }));
}

function toolConfig(call: ChatCall): Record<string, unknown> | undefined {
  const c = call.toolChoice;
  if (!c) return undefined;
  if (c.kind === 'function') return { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [c.name] } };
  return { functionCallingConfig: { mode: { auto: 'AUTO', none: 'NONE', required: 'ANY' }[c.kind] } };
}

/** The GenerateContentRequest of a chat-completions call. */
function generateContentRequest(call: ChatCall): Record<string, unknown> {
  if (!call.parallelToolCalls && call.tools.length > 0) throw bad('parallel_tool_calls', 'genvendor has no switch for parallel tool calls');
  const system = systemTexts(call.messages);
  const tc = toolConfig(call);
  const generation = {
    ...(call.maxTokens !== undefined && { maxOutputTokens: call.maxTokens }),
    ...(call.temperature !== undefined && { temperature: call.temperature }),
    ...(call.topP !== undefined && { topP: call.topP }),
    ...(call.stop.length > 0 && { stopSequences: call.stop }),
    ...(call.reasoningEffort && { thinkingConfig: { includeThoughts: true, thinkingBudget: THINKING_BUDGET[call.reasoningEffort] } }),
  };
  return {
    contents: contents(call),
    ...(system.length > 0 && { systemInstruction: { parts: system.map((text) => ({ text })) } }),
    ...(call.tools.length > 0 && {
      tools: [{ functionDeclarations: call.tools.map((t) => ({ name: t.name, ...(t.description !== undefined && { description: t.description }), parametersJsonSchema: t.parameters })) }],
    }),
    ...(tc && { toolConfig: tc }),
    ...(Object.keys(generation).length > 0 && { generationConfig: generation }),
  };
}

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

function usageOf(m: unknown): ChatUsage | undefined {
  const thoughts = typeof m === 'object' && m !== null ? num((m as Record<string, unknown>)['thoughtsTokenCount']) : 0;
  return chatUsageFrom(generateContentUsage({ usageMetadata: m }), thoughts);
}

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
function read(parts: Part[], idBase: string, firstIndex: number): { text: string; reasoning: string; calls: ChatToolCall[] } {
  let text = '';
  let reasoning = '';
  const calls: ChatToolCall[] = [];
  for (const p of parts) {
    if (p['thought'] === true) {
      if (typeof p['text'] === 'string') reasoning += p['text'];
      continue;
    }
    if (typeof p['text'] === 'string') text += p['text'];
    const fc = p['functionCall'] as Record<string, unknown> | undefined;
    if (fc) {
      const id = typeof fc['id'] === 'string' ? fc['id'] : `call_${idBase}_${firstIndex + calls.length}`;
      calls.push({ id, name: String(fc['name']), arguments: JSON.stringify(fc['args'] ?? {}) });
    }
  }
  return { text, reasoning, calls };
}

function replyJson(ctx: ReplyContext, reply: unknown): Buffer {
  const r = (reply ?? {}) as Record<string, unknown>;
  const id = typeof r['responseId'] === 'string' ? r['responseId'] : undefined;
  const c = candidate(r);
  const { text, reasoning, calls } = read(c.parts, id ?? ctx.fallbackId, 0);
  return completion(ctx, id, { text, toolCalls: calls, reasoning }, finishOf(c.finishReason, calls.length > 0), usageOf(r['usageMetadata']));
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
    w.usage = usageOf(r['usageMetadata']) ?? w.usage;
    const c = candidate(r);
    const { text, reasoning, calls: found } = read(c.parts, w.id, calls);
    w.role();
    w.reasoning(reasoning);
    w.text(text);
    for (const call of found) w.toolCall({ index: calls++, id: call.id, name: call.name, arguments: call.arguments });
    if (c.finishReason !== undefined) w.finish(finishOf(c.finishReason, calls > 0));
  });
  return chunkStream(scanner, w);
}

/** A chat-completions call as a generateContent call, and its reply back. */
export function toGenerateContent(body: ChatRequest, ctx: ReplyContext): TranslatedCall {
  const call = readChatCall(body, 'genvendor');
  const model = call.model.replace(/^models\//, '');
  if (!isModelPathSegment(model)) throw bad('model', `not a genvendor model name: ${JSON.stringify(call.model)}`);
  const reply = chatReply({ json: (r) => replyJson(ctx, r), error: replyError, stream: () => replyStream(ctx) });
  return {
    provider: 'genvendor',
    path: call.stream ? `/v1beta/models/${model}:streamGenerateContent?alt=sse` : `/v1beta/models/${model}:generateContent`,
    body: Buffer.from(JSON.stringify(generateContentRequest(call))),
    reply,
  };
}
