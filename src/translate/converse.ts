import type { Message } from '@smithy/eventstream-codec';
import { toUtf8 } from '@smithy/util-utf8';
import type { Location } from '../providers/adapter.js';
import { encodeModelId, isAwsRegion } from '../providers/cloudy.js';
import { EventStreamScanner } from '../providers/eventstream.js';
import { num } from '../providers/sse.js';
import { converseUsage } from '../providers/usage/converse.js';
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
  type ChatCall,
  type ChatPart,
  type ChatToolCall,
  type ChatUsage,
  type FinishReason,
} from './chat.js';
import type { ChatRequest, ReplyContext, StreamTransform, TranslatedCall } from './types.js';

/** Chat completions ⇄ Bedrock Converse / ConverseStream (cloudy). */

type Block = Record<string, unknown>;
type Turn = { role: 'user' | 'assistant'; blocks: Block[] };

const IMAGE_FORMATS: Readonly<Record<string, string>> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/jpg': 'jpeg', 'image/gif': 'gif', 'image/webp': 'webp' };

function block(p: ChatPart, field: string): Block {
  if (p.kind === 'text') return { text: p.text };
  if (p.kind === 'image_url') throw bad(field, 'cloudy takes images inline: send a data: URL');
  const format = IMAGE_FORMATS[p.mediaType];
  if (format === undefined) throw bad(field, `cloudy takes png, jpeg, gif or webp images, not ${p.mediaType}`);
  return { image: { format, source: { bytes: p.data } } };
}

function messages(call: ChatCall): Array<{ role: Turn['role']; content: Block[] }> {
  const turns = call.messages.flatMap((m, i): Turn[] => {
    const field = `messages[${i}]`;
    switch (m.role) {
      case 'system':
        return [];
      case 'user':
        return [{ role: 'user', blocks: m.parts.map((p, j) => block(p, `${field}.content[${j}]`)) }];
      case 'tool':
        return [{ role: 'user', blocks: [{ toolResult: { toolUseId: m.toolCallId, content: [{ text: m.text }] } }] }];
      case 'assistant':
        return [
          {
            role: 'assistant',
            blocks: [
              ...m.parts.map((p, j) => block(p, `${field}.content[${j}]`)),
              ...m.toolCalls.map((c, j) => ({ toolUse: { toolUseId: c.id, name: c.name, input: parsedArguments(c, `${field}.tool_calls[${j}].function.arguments`) } })),
            ],
          },
        ];
    }
  });
  return alternate(turns).map((t) => ({ role: t.role, content: t.blocks }));
}

function toolChoice(call: ChatCall): Block | undefined {
  const c = call.toolChoice;
  if (!c || c.kind === 'auto') return c && { auto: {} };
  if (c.kind === 'required') return { any: {} };
  if (c.kind === 'function') return { tool: { name: c.name } };
  throw bad('tool_choice', 'cloudy has no "none" tool choice: leave the tools out instead');
}

/** The Converse request body of a chat-completions call (the model id rides in the path). */
function converseRequest(call: ChatCall): Record<string, unknown> {
  if (!call.parallelToolCalls && call.tools.length > 0) throw bad('parallel_tool_calls', 'cloudy has no switch for parallel tool calls');
  if (call.reasoningEffort) throw bad('reasoning_effort', 'not translated to cloudy yet');
  const system = systemTexts(call.messages);
  const choice = toolChoice(call);
  const inference = {
    ...(call.maxTokens !== undefined && { maxTokens: call.maxTokens }),
    ...(call.temperature !== undefined && { temperature: call.temperature }),
    ...(call.topP !== undefined && { topP: call.topP }),
    ...(call.stop.length > 0 && { stopSequences: call.stop }),
  };
  return {
    messages: messages(call),
    ...(system.length > 0 && { system: system.map((text) => ({ text })) }),
    ...(Object.keys(inference).length > 0 && { inferenceConfig: inference }),
    ...(call.tools.length > 0 && {
      toolConfig: {
        tools: call.tools.map((t) => ({ toolSpec: { name: t.name, ...(t.description !== undefined && { description: t.description }), inputSchema: { json: t.parameters } } })),
        ...(choice && { toolChoice: choice }),
      },
    }),
  };
}

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

/** Bedrock counts cache reads and writes apart from inputTokens; OpenAI's prompt_tokens includes them. */
function usageOf(u: unknown): ChatUsage | undefined {
  return chatUsageFrom(converseUsage({ usage: u }));
}

function replyJson(ctx: ReplyContext, reply: unknown): Buffer {
  const r = (reply ?? {}) as Record<string, unknown>;
  const content = ((r['output'] as { message?: { content?: unknown } } | undefined)?.message?.content ?? []) as Block[];
  let text = '';
  const toolCalls: ChatToolCall[] = [];
  for (const b of Array.isArray(content) ? content : []) {
    if (typeof b['text'] === 'string') text += b['text'];
    const use = b['toolUse'] as Record<string, unknown> | undefined;
    if (use) toolCalls.push({ id: String(use['toolUseId']), name: String(use['name']), arguments: JSON.stringify(use['input'] ?? {}) });
  }
  return completion(ctx, undefined, { text, toolCalls }, finishOf(r['stopReason']), usageOf(r['usage']));
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
        w.usage = usageOf(e['usage']) ?? w.usage;
        break;
    }
  };
  const scanner = new EventStreamScanner(() => true, onMessage);
  return chunkStream(scanner, w);
}

function region(headers: Readonly<Record<string, string>>): Location {
  const r = headers['x-gw-aws-region'];
  if (r === undefined) return {};
  if (!isAwsRegion(r)) throw bad('x-gw-aws-region', `not an AWS region: ${JSON.stringify(r)}`);
  return { region: r };
}

/** A chat-completions call as a Converse call, and its reply back. */
export function toConverse(body: ChatRequest, ctx: ReplyContext, headers: Readonly<Record<string, string>>): TranslatedCall {
  const call = readChatCall(body, 'cloudy');
  const method = call.stream ? 'converse-stream' : 'converse';
  const reply = chatReply({ json: (r) => replyJson(ctx, r), error: replyError, stream: () => replyStream(ctx) });
  return {
    provider: 'cloudy',
    location: region(headers),
    // a stored key's region is checked like the caller's, before anything is sent
    path: (loc) => {
      if (loc.region !== undefined && !isAwsRegion(loc.region)) throw bad('region', `not an AWS region: ${JSON.stringify(loc.region)}`);
      return `/model/${encodeModelId(call.model)}/${method}`;
    },
    body: Buffer.from(JSON.stringify(converseRequest(call))),
    reply,
  };
}
