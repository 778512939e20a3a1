import { GatewayError } from '../../errors.js';
import type { ChatRequest } from '../types.js';

/**
 * The chat-completions request side of every translation: the caller's body
 * read into a neutral form (validated, with 400s naming the field) that each
 * pair's request side writes in its vendor's format.
 */

export type ChatPart = { kind: 'text'; text: string } | { kind: 'image'; mediaType: string; data: string } | { kind: 'image_url'; url: string };

export interface ChatToolCall {
  id: string;
  name: string;
  /** the arguments as the caller sent them: a JSON text */
  arguments: string;
}

export type ChatMessage =
  | { role: 'system'; text: string }
  | { role: 'user'; parts: ChatPart[] }
  | { role: 'assistant'; parts: ChatPart[]; toolCalls: ChatToolCall[] }
  | { role: 'tool'; toolCallId: string; text: string };

export interface ChatTool {
  name: string;
  description: string | undefined;
  parameters: Record<string, unknown>;
}

export type ChatToolChoice = { kind: 'auto' | 'none' | 'required' } | { kind: 'function'; name: string };

/** Everything a translator maps, read from the caller's body. */
export interface ChatCall {
  model: string;
  stream: boolean;
  /** the caller's messages as sent (a non-empty array): eachMessage reads them one at a time, so they are never held in a second form */
  messages: readonly unknown[];
  tools: ChatTool[];
  toolChoice: ChatToolChoice | undefined;
  parallelToolCalls: boolean;
  maxTokens: number | undefined;
  temperature: number | undefined;
  topP: number | undefined;
  stop: string[];
  user: string | undefined;
  /** reasoning_effort: how much the model may think before it answers */
  reasoningEffort: ReasoningEffort | undefined;
}

export type ReasoningEffort = 'minimal' | 'low' | 'medium' | 'high';
const EFFORTS: readonly string[] = ['minimal', 'low', 'medium', 'high'];

/** Thinking tokens a vendor that budgets them (Anthropic, Gemini) is allowed for each effort. */
export const THINKING_BUDGET: Readonly<Record<ReasoningEffort, number>> = { minimal: 1024, low: 2048, medium: 8192, high: 24_576 };

function reasoningEffort(v: unknown): ReasoningEffort | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || !EFFORTS.includes(v)) throw bad('reasoning_effort', `must be one of ${EFFORTS.join(', ')}`);
  return v as ReasoningEffort;
}

/** A 400 naming the field the translation cannot carry. */
export const bad = (field: string, message: string): GatewayError => new GatewayError('request_error', `${field}: ${message}`, { fields: { field } });

/** Parameters every translation reads (or that never change what the model does). */
const READ = new Set(['model', 'messages', 'stream', 'stream_options', 'tools', 'tool_choice', 'parallel_tool_calls', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'stop', 'user', 'reasoning_effort']);
/** Bookkeeping for OpenAI's own platform; meaningless to another vendor and harmless to drop. */
const IGNORED = new Set(['store', 'metadata', 'service_tier', 'prompt_cache_key', 'safety_identifier']);
/** Parameters that are harmless at their default value and refused at any other. */
const NEUTRAL: Readonly<Record<string, (v: unknown) => boolean>> = {
  n: (v) => v === 1,
  logprobs: (v) => v === false,
  top_logprobs: (v) => v === 0,
  presence_penalty: (v) => v === 0,
  frequency_penalty: (v) => v === 0,
  logit_bias: (v) => typeof v === 'object' && v !== null && Object.keys(v).length === 0,
  response_format: (v) => (v as { type?: unknown } | null)?.type === 'text',
  modalities: (v) => Array.isArray(v) && v.length === 1 && v[0] === 'text',
};

/**
 * Refuses, naming them, the parameters the target cannot honour: silently
 * dropping `n: 2` or a `response_format` would change what the caller gets.
 */
function refuseUnsupported(body: ChatRequest, target: string): void {
  const refused = Object.keys(body).filter((k) => {
    const v = body[k];
    if (v === null || v === undefined || READ.has(k) || IGNORED.has(k)) return false;
    const neutral = NEUTRAL[k];
    return !neutral?.(v);
  });
  if (refused.length > 0) {
    throw new GatewayError('request_error', `not supported when chat completions are translated to ${target}: ${refused.join(', ')}`, { fields: { field: refused[0], unsupported: refused } });
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const DATA_URL = /^data:([a-z]+\/[a-z0-9.+-]+);base64,(.*)$/is;

function part(p: unknown, field: string): ChatPart {
  if (!isObject(p)) throw bad(field, 'must be a content part object');
  if (p['type'] === 'text') {
    if (typeof p['text'] !== 'string') throw bad(`${field}.text`, 'required string');
    return { kind: 'text', text: p['text'] };
  }
  if (p['type'] === 'image_url') {
    const url = isObject(p['image_url']) ? p['image_url']['url'] : undefined;
    if (typeof url !== 'string') throw bad(`${field}.image_url.url`, 'required string');
    const data = DATA_URL.exec(url);
    if (data) return { kind: 'image', mediaType: (data[1] as string).toLowerCase(), data: data[2] as string };
    if (!url.startsWith('https://')) throw bad(`${field}.image_url.url`, 'must be a data: URL or an https:// URL');
    return { kind: 'image_url', url };
  }
  throw bad(`${field}.type`, `content part ${JSON.stringify(p['type'])} is not supported when translated to another provider`);
}

function parts(content: unknown, field: string): ChatPart[] {
  if (typeof content === 'string') return content === '' ? [] : [{ kind: 'text', text: content }];
  if (content === null || content === undefined) return [];
  if (!Array.isArray(content)) throw bad(field, 'must be a string or an array of content parts');
  return content.map((p, i) => part(p, `${field}[${i}]`));
}

/** Text of a message whose content may only be text (system, developer, tool). */
function textOnly(content: unknown, field: string): string {
  return parts(content, field)
    .map((p, i) => {
      if (p.kind !== 'text') throw bad(`${field}[${i}]`, 'only text parts are allowed here');
      return p.text;
    })
    .join('\n');
}

function toolCalls(v: unknown, field: string): ChatToolCall[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw bad(field, 'must be an array');
  return v.map((c, i) => {
    const f = isObject(c) && isObject(c['function']) ? c['function'] : undefined;
    if (!isObject(c) || typeof c['id'] !== 'string' || !f || typeof f['name'] !== 'string' || typeof f['arguments'] !== 'string') {
      throw bad(`${field}[${i}]`, 'a tool call needs id, function.name and function.arguments (a JSON string)');
    }
    return { id: c['id'], name: f['name'], arguments: f['arguments'] };
  });
}

function message(m: unknown, i: number): ChatMessage {
  const field = `messages[${i}]`;
  if (!isObject(m)) throw bad(field, 'must be an object');
  const role = m['role'];
  switch (role) {
    case 'system':
    case 'developer':
      return { role: 'system', text: textOnly(m['content'], `${field}.content`) };
    case 'user':
      return { role: 'user', parts: parts(m['content'], `${field}.content`) };
    case 'assistant':
      if (m['function_call'] !== undefined && m['function_call'] !== null) throw bad(`${field}.function_call`, 'deprecated; use tool_calls');
      return { role: 'assistant', parts: parts(m['content'], `${field}.content`), toolCalls: toolCalls(m['tool_calls'], `${field}.tool_calls`) };
    case 'tool':
      if (typeof m['tool_call_id'] !== 'string') throw bad(`${field}.tool_call_id`, 'required string');
      return { role: 'tool', toolCallId: m['tool_call_id'], text: textOnly(m['content'], `${field}.content`) };
    default:
      throw bad(`${field}.role`, `${JSON.stringify(role)} is not a role chat completions can translate (system, developer, user, assistant, tool)`);
  }
}

function tools(v: unknown): ChatTool[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw bad('tools', 'must be an array');
  return v.map((t, i) => {
    const f = isObject(t) && t['type'] === 'function' && isObject(t['function']) ? t['function'] : undefined;
    if (!f || typeof f['name'] !== 'string') throw bad(`tools[${i}]`, 'only function tools ({type:"function", function:{name, …}}) can be translated');
    const parameters = f['parameters'] ?? { type: 'object', properties: {} };
    if (!isObject(parameters)) throw bad(`tools[${i}].function.parameters`, 'must be a JSON Schema object');
    return { name: f['name'], description: typeof f['description'] === 'string' ? f['description'] : undefined, parameters };
  });
}

function toolChoice(v: unknown): ChatToolChoice | undefined {
  if (v === undefined || v === null) return undefined;
  if (v === 'auto' || v === 'none' || v === 'required') return { kind: v };
  if (isObject(v) && v['type'] === 'function' && isObject(v['function']) && typeof v['function']['name'] === 'string') return { kind: 'function', name: v['function']['name'] };
  throw bad('tool_choice', 'must be "auto", "none", "required" or {type:"function", function:{name}}');
}

const optionalNumber = (body: ChatRequest, name: string): number | undefined => {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(name, 'must be a number');
  return v;
};

function stop(v: unknown): string[] {
  if (v === undefined || v === null) return [];
  if (typeof v === 'string') return [v];
  if (Array.isArray(v) && v.every((s) => typeof s === 'string')) return v as string[];
  throw bad('stop', 'must be a string or an array of strings');
}

/** Reads a chat-completions body for translation to `target`; 400 on anything it cannot carry (a message's own fault when eachMessage reaches it). */
export function readChatCall(body: ChatRequest, target: string): ChatCall {
  refuseUnsupported(body, target);
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw bad('messages', 'required non-empty array');
  const maxTokens = optionalNumber(body, 'max_completion_tokens') ?? optionalNumber(body, 'max_tokens');
  const user = body['user'];
  return {
    model: body.model,
    stream: body.stream === true,
    messages: body.messages as unknown[],
    tools: tools(body['tools']),
    toolChoice: toolChoice(body['tool_choice']),
    parallelToolCalls: body['parallel_tool_calls'] !== false,
    maxTokens,
    temperature: optionalNumber(body, 'temperature'),
    topP: optionalNumber(body, 'top_p'),
    stop: stop(body['stop']),
    user: typeof user === 'string' ? user : undefined,
    reasoningEffort: reasoningEffort(body['reasoning_effort']),
  };
}

/** Reads each message in order, 400 naming the first that cannot be translated; none is kept once visited. */
export function eachMessage(call: ChatCall, visit: (m: ChatMessage, i: number) => void): void {
  const raw = call.messages;
  for (let i = 0; i < raw.length; i++) visit(message(raw[i], i), i);
}

const roleOf = (m: unknown): unknown => (isObject(m) ? m['role'] : undefined);

/** The name of the function a tool result answers: the vendors that want it get it from the assistant turn that called it. */
export function toolNamesById(call: ChatCall): Map<string, string> {
  const names = new Map<string, string>();
  call.messages.forEach((raw, i) => {
    if (roleOf(raw) !== 'assistant') return;
    const m = message(raw, i);
    if (m.role === 'assistant') for (const c of m.toolCalls) names.set(c.id, c.name);
  });
  return names;
}

/** A tool call's arguments as an object, for vendors that take them parsed. */
export function parsedArguments(call: ChatToolCall, field: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(call.arguments === '' ? '{}' : call.arguments);
    if (isObject(v)) return v;
  } catch {
    // refused below
  }
  throw bad(field, `arguments of tool call ${call.id} must be a JSON object`);
}

/** Every system and developer message's text, in order, for vendors that take the system prompt apart from the turns. */
export function systemTexts(call: ChatCall): string[] {
  const texts: string[] = [];
  call.messages.forEach((raw, i) => {
    const role = roleOf(raw);
    if (role !== 'system' && role !== 'developer') return;
    const m = message(raw, i);
    if (m.role === 'system' && m.text !== '') texts.push(m.text);
  });
  return texts;
}
