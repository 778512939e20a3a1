/**
 * The caller's prompt text in a parsed request body, per vendor shape: system
 * (and developer) instructions and user turns. Assistant turns, tool calls and
 * tool results are the model's and the tools' words, not the caller's, and are
 * left out; so are images, documents and other non-text parts. A malformed
 * body yields what text it has (the surface's own validation judges the rest).
 */

export type BodyShape = 'chat_completions' | 'responses' | 'messages' | 'generate_content' | 'converse' | 'native';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

const CALLER_ROLES = new Set(['system', 'developer', 'user']);

/** A string, or the `text` of each part whose type is absent or one of `textTypes`. */
function textOf(content: unknown, out: string[], textTypes: ReadonlySet<string>): void {
  if (typeof content === 'string') {
    out.push(content);
    return;
  }
  for (const part of list(content)) {
    if (typeof part === 'string') out.push(part);
    else if (isObj(part) && typeof part.text === 'string' && (part.type === undefined || textTypes.has(part.type as string))) out.push(part.text);
  }
}

const CHAT_TEXT = new Set(['text', 'input_text']);
const ANTHROPIC_TEXT = new Set(['text']);
/** Gemini and Bedrock parts carry no type: a text part is the one with `text`. */
const UNTYPED = new Set<string>();

function chatMessages(messages: unknown, out: string[]): void {
  for (const m of list(messages)) {
    if (isObj(m) && CALLER_ROLES.has(m.role as string)) textOf(m.content, out, CHAT_TEXT);
  }
}

function responsesBody(body: Obj, out: string[]): void {
  if (typeof body.instructions === 'string') out.push(body.instructions);
  if (typeof body.input === 'string') {
    out.push(body.input);
    return;
  }
  for (const item of list(body.input)) {
    // an item without a type is a message; typed items other than messages are tool traffic
    if (isObj(item) && (item.type === undefined || item.type === 'message') && CALLER_ROLES.has(item.role as string)) textOf(item.content, out, CHAT_TEXT);
  }
}

function anthropicBody(body: Obj, out: string[]): void {
  textOf(body.system, out, ANTHROPIC_TEXT);
  for (const m of list(body.messages)) {
    if (isObj(m) && m.role === 'user') textOf(m.content, out, ANTHROPIC_TEXT);
  }
}

function geminiBody(body: Obj, out: string[]): void {
  const system = body.systemInstruction ?? body.system_instruction;
  if (typeof system === 'string') out.push(system);
  else if (isObj(system)) textOf(system.parts, out, UNTYPED);
  for (const c of list(body.contents)) {
    if (isObj(c) && (c.role === undefined || c.role === 'user')) textOf(c.parts, out, UNTYPED);
  }
}

function converseBody(body: Obj, out: string[]): void {
  textOf(body.system, out, UNTYPED);
  for (const m of list(body.messages)) {
    if (isObj(m) && m.role === 'user') textOf(m.content, out, UNTYPED);
  }
}

/** The caller's prompt text parts of a parsed body of the given shape, in body order. */
export function promptTextParts(shape: BodyShape, body: unknown): string[] {
  const out: string[] = [];
  if (!isObj(body)) return out;
  switch (shape) {
    case 'chat_completions':
      chatMessages(body.messages, out);
      break;
    case 'native':
      if (isObj(body.input)) chatMessages(body.input.messages, out);
      break;
    case 'responses':
      responsesBody(body, out);
      break;
    case 'messages':
      anthropicBody(body, out);
      break;
    case 'generate_content':
      geminiBody(body, out);
      break;
    case 'converse':
      converseBody(body, out);
      break;
  }
  return out;
}
