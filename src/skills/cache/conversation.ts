/**
 * The cache's own reading of a request body, per surface message shape: the
 * conversation as turns of text (plus, canonically, every non-text part such
 * as images, tool calls and tool results), and the rest of the body that can
 * change the answer. Kept to one function so the shared message views can
 * replace it.
 */

export interface Turn {
  role: string;
  /** the turn's text parts, joined by a line break */
  text: string;
  /** canonical JSON of everything else in the turn (images, tool calls, tool results, names); '' when none */
  other: string;
}

export interface Conversation {
  turns: Turn[];
  /** canonical JSON of the body fields outside the conversation that can change the answer */
  scope: string;
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = { [k: string]: Json };

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** JSON with object keys sorted at every level: equal values give equal strings. */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (isObj(v)) {
    const keys = Object.keys(v).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/**
 * Body fields that never change the answer's content: caller bookkeeping and
 * the stream flag (the main thread adds the stream flag to the scope itself,
 * since some surfaces carry it in the path).
 */
const NOT_ANSWER_FIELDS = new Set(['stream', 'user', 'metadata', 'store', 'prompt_cache_key', 'safety_identifier', 'skill_overrides']);

const TEXT_TYPES = new Set(['text', 'input_text', 'output_text']);

/** A part that is only text: a string, `{type: "text", text}` and its kin, or Gemini/Converse `{text}`. */
function textOf(part: Json): string | undefined {
  if (typeof part === 'string') return part;
  if (!isObj(part) || typeof part['text'] !== 'string') return undefined;
  const keys = Object.keys(part);
  if (keys.length === 1) return part['text'];
  if (keys.length === 2 && typeof part['type'] === 'string' && TEXT_TYPES.has(part['type'])) return part['text'];
  return undefined;
}

/** A turn from its role, its content (a string or a list of parts) and any other fields it carries. */
function turn(role: string, content: Json | undefined, rest: Obj): Turn {
  const texts: string[] = [];
  const other: Json[] = [];
  for (const part of content === undefined || content === null ? [] : Array.isArray(content) ? content : [content]) {
    const t = textOf(part);
    if (t === undefined) other.push(part);
    else texts.push(t);
  }
  const extra = Object.keys(rest).length > 0;
  return { role, text: texts.join('\n'), other: other.length > 0 || extra ? canonical({ parts: other, ...rest }) : '' };
}

/** Turns of a list of `{role, content, ...}` messages (chat-completions, messages, converse, native). */
function roleContentTurns(messages: Json | undefined, contentField = 'content', defaultRole = '?'): Turn[] | undefined {
  if (!Array.isArray(messages)) return undefined;
  return messages.map((m) => {
    if (!isObj(m)) return { role: '?', text: '', other: canonical(m) };
    const { role, [contentField]: content, ...rest } = m;
    return turn(typeof role === 'string' ? role : defaultRole, content, rest);
  });
}

/** Responses `input`: a string, or items that are messages or other typed items (function calls and outputs). */
function responsesTurns(input: Json | undefined): Turn[] | undefined {
  if (typeof input === 'string') return [{ role: 'user', text: input, other: '' }];
  if (!Array.isArray(input)) return undefined;
  return input.map((item) => {
    if (!isObj(item)) return { role: '?', text: '', other: canonical(item) };
    const { role, content, type, ...rest } = item;
    if (typeof role === 'string' && (type === undefined || type === 'message')) return turn(role, content, rest);
    return { role: typeof type === 'string' ? type : '?', text: '', other: canonical(item) };
  });
}

const without = (o: Obj, fields: readonly string[]): Obj => Object.fromEntries(Object.entries(o).filter(([k]) => !fields.includes(k) && !NOT_ANSWER_FIELDS.has(k)));

/**
 * The conversation of a parsed body on one surface, or undefined when the
 * body is not that surface's shape (the cache then stays out of the way).
 */
export function conversationOf(surface: string, json: unknown): Conversation | undefined {
  if (!isObj(json)) return undefined;
  switch (surface) {
    case 'chat_completions':
    case 'cloudx':
    case 'messages':
    case 'converse': {
      const turns = roleContentTurns(json['messages']);
      return turns && { turns, scope: canonical(without(json, ['messages'])) };
    }
    case 'responses': {
      const turns = responsesTurns(json['input']);
      return turns && { turns, scope: canonical(without(json, ['input'])) };
    }
    case 'generate_content': {
      const turns = roleContentTurns(json['contents'], 'parts', 'user'); // Gemini: a content without a role is the user's
      return turns && { turns, scope: canonical(without(json, ['contents'])) };
    }
    case 'native':
    case 'execute': {
      const input = json['input'];
      if (!isObj(input)) return undefined;
      const turns = roleContentTurns(input['messages']);
      const execution = isObj(json['execution']) ? without(json['execution'], ['timeout_ms']) : null;
      return turns && { turns, scope: canonical({ input: without(input, ['messages']), target: json['target'] ?? null, execution }) };
    }
    default:
      return undefined;
  }
}
