/**
 * The caller's prompt text in a request body (parsed, or walked in place),
 * per vendor shape: system (and developer) instructions and user turns. Assistant turns, tool calls and
 * tool results are the model's and the tools' words, not the caller's, and are
 * left out; so are images, documents and other non-text parts. A malformed
 * body yields what text it has (the surface's own validation judges the rest).
 */

import { JsonWalk, NotJson, WALK_EXPIRED } from './json-walk.js';
import type { Deadline } from './normalize.js';

export type BodyShape = 'chat_completions' | 'responses' | 'messages' | 'generate_content' | 'converse' | 'native';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

const CALLER_ROLES = new Set(['system', 'developer', 'user']);

/**
 * A string, or the `text` of each part whose type is absent or one of
 * `textTypes`. The model reads a turn's parts as one text, so several are
 * read joined, twice: by a space (an order split at a word's edge) and as they
 * stand (split inside a word); each part alone would read as nothing.
 */
function textOf(content: unknown, out: string[], textTypes: ReadonlySet<string>): void {
  if (typeof content === 'string') {
    out.push(content);
    return;
  }
  const texts: string[] = [];
  for (const part of list(content)) {
    if (typeof part === 'string') texts.push(part);
    else if (isObj(part) && typeof part.text === 'string' && (part.type === undefined || textTypes.has(part.type as string))) texts.push(part.text);
  }
  if (texts.length === 1) out.push(texts[0]!);
  else if (texts.length > 1) out.push(texts.join(' '), texts.join(''));
}

const CHAT_TEXT = new Set(['text', 'input_text']);
const ANTHROPIC_TEXT = new Set(['text']);
/** Gemini and Bedrock parts carry no type: a text part is the one with `text`. */
const UNTYPED = new Set<string>();

/** A chat message's caller text (system, developer and user turns). */
function chatMessage(m: unknown, out: string[]): void {
  if (isObj(m) && CALLER_ROLES.has(m.role as string)) textOf(m.content, out, CHAT_TEXT);
}

/**
 * Where a shape's turns are and how each is read, and the caller's text
 * beside them (system instructions): one table for both readings, of a parsed
 * body and of a body walked in place. The turns are the one member that
 * grows with a conversation; the rest is read whole.
 */
interface ShapeReading {
  /** the member path to the turns (an array: each turn is read on its own) */
  readonly turns: readonly [string] | readonly [string, string];
  /** one turn's caller text */
  turn(t: unknown, out: string[]): void;
  /** the turns member when it is not an array (the Responses API's `input` may be a string) */
  single?(v: unknown, out: string[]): void;
  /** top-level members read whole for `before` */
  readonly beside: readonly string[];
  /** the caller's text that comes before the turns, from the `beside` members */
  before?(body: Obj, out: string[]): void;
}

/** Anthropic's and Bedrock's shape: the `system` prompt, then the `user` messages; text parts of `textTypes`. */
const userMessages = (textTypes: ReadonlySet<string>): ShapeReading => ({
  turns: ['messages'],
  turn: (m, out) => {
    if (isObj(m) && m.role === 'user') textOf(m.content, out, textTypes);
  },
  beside: ['system'],
  before: (body, out) => textOf(body.system, out, textTypes),
});

const READINGS: Readonly<Record<BodyShape, ShapeReading>> = {
  chat_completions: { turns: ['messages'], turn: chatMessage, beside: [] },
  native: { turns: ['input', 'messages'], turn: chatMessage, beside: [] },
  responses: {
    turns: ['input'],
    // an item without a type is a message; typed items other than messages are tool traffic
    turn: (item, out) => {
      if (isObj(item) && (item.type === undefined || item.type === 'message') && CALLER_ROLES.has(item.role as string)) textOf(item.content, out, CHAT_TEXT);
    },
    single: (input, out) => {
      if (typeof input === 'string') out.push(input);
    },
    beside: ['instructions'],
    before: (body, out) => {
      if (typeof body.instructions === 'string') out.push(body.instructions);
    },
  },
  messages: userMessages(ANTHROPIC_TEXT),
  generate_content: {
    turns: ['contents'],
    turn: (c, out) => {
      if (isObj(c) && (c.role === undefined || c.role === 'user')) textOf(c.parts, out, UNTYPED);
    },
    beside: ['systemInstruction', 'system_instruction'],
    before: (body, out) => {
      const system = body.systemInstruction ?? body.system_instruction;
      if (typeof system === 'string') out.push(system);
      else if (isObj(system)) textOf(system.parts, out, UNTYPED);
    },
  },
  converse: userMessages(UNTYPED),
};

/** The caller's prompt text parts of a parsed body of the given shape, in body order. */
export function promptTextParts(shape: BodyShape, body: unknown): string[] {
  const out: string[] = [];
  if (!isObj(body)) return out;
  const reading = READINGS[shape];
  reading.before?.(body, out);
  let turns: unknown = body;
  for (const key of reading.turns) turns = isObj(turns) ? turns[key] : undefined;
  if (Array.isArray(turns)) for (const t of turns) reading.turn(t, out);
  else reading.single?.(turns, out);
  return out;
}

/** What a walk of a large body read: its prompt text parts, unless the deadline passed first. */
export type WalkedParts = { complete: true; parts: string[] } | { complete: false };

/**
 * The same parts as promptTextParts of the parsed body, read from the body's
 * bytes in place: each turn is built alone and dropped once its text is
 * taken, and every other member is checked, never built. Like JSON.parse, a
 * member given twice counts as its last. Undefined for a body that is not
 * JSON (where parsing it throws).
 */
export function walkedPromptTextParts(shape: BodyShape, bytes: Uint8Array, deadline: Deadline): WalkedParts | undefined {
  const reading = READINGS[shape];
  const walk = new JsonWalk(bytes, deadline);
  const beside: Obj = {};
  let turns: string[] = [];
  /** the member at `reading.turns[depth]` comes next */
  const readTurns = (depth: number): void => {
    turns = [];
    if (depth === reading.turns.length - 1) {
      if (walk.atArray()) walk.eachValue((t) => reading.turn(t, turns));
      else if (reading.single) reading.single(walk.value(), turns);
      else walk.skip();
    } else if (walk.atObject()) walk.members((key) => (key === reading.turns[depth + 1] ? readTurns(depth + 1) : walk.skip()));
    else walk.skip();
  };
  try {
    if (!walk.atObject()) {
      walk.skip();
      walk.end();
      return { complete: true, parts: [] };
    }
    walk.members((key) => {
      if (key === reading.turns[0]) readTurns(0);
      else if (reading.beside.includes(key)) beside[key] = walk.value();
      else walk.skip();
    });
    walk.end();
  } catch (err) {
    if (err === WALK_EXPIRED) return { complete: false };
    if (err instanceof NotJson || err instanceof SyntaxError) return undefined;
    throw err;
  }
  const out: string[] = [];
  reading.before?.(beside, out);
  for (const t of turns) out.push(t);
  return { complete: true, parts: out };
}
