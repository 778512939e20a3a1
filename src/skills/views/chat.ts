import { field, isObj, str, type Json, type PartCollector, type PartKind, type Shape } from './view.js';

/**
 * Chat-completions messages (`/v1/chat/completions`, the cloudx chat route,
 * and `input.messages` on the native `/v1/execute`): `{role, content}` where
 * content is a string or `[{type: "text", text}, …]`; assistant `tool_calls`
 * (arguments are a JSON string) and `role: "tool"` results by `tool_call_id`.
 * No inline prompt-cache marker exists in this shape.
 */

const KIND: Readonly<Record<string, PartKind>> = { system: 'system', developer: 'system', user: 'user', assistant: 'assistant', tool: 'tool_result', function: 'tool_result' };

function walkMessages(messages: unknown[], c: PartCollector): void {
  messages.forEach((m, turn) => {
    if (!isObj(m)) return;
    const role = str(m['role']) ?? '';
    const kind = KIND[role];
    if (kind === undefined) return;
    if (typeof m['content'] === 'string') c.add(role, turn, kind, field(m, 'content'));
    else if (Array.isArray(m['content'])) {
      for (const block of m['content']) if (isObj(block) && typeof block['text'] === 'string') c.add(role, turn, kind, field(block, 'text'));
    }
    if (Array.isArray(m['tool_calls'])) {
      for (const call of m['tool_calls']) {
        const fn = isObj(call) ? call['function'] : undefined;
        if (isObj(fn) && typeof fn['arguments'] === 'string') c.add(role, turn, 'tool_call', field(fn, 'arguments'), str(fn['name']));
      }
    }
  });
}

const callIds = (turn: unknown): string[] =>
  isObj(turn) && Array.isArray(turn['tool_calls']) ? turn['tool_calls'].flatMap((c) => (isObj(c) && typeof c['id'] === 'string' ? [c['id']] : [])) : [];
const resultIds = (turn: unknown): string[] => (isObj(turn) && turn['role'] === 'tool' && typeof turn['tool_call_id'] === 'string' ? [turn['tool_call_id']] : []);
const roleOf = (turn: unknown): string => (isObj(turn) ? (str(turn['role']) ?? '') : '');
const userTurn = (text: string): unknown => ({ role: 'user', content: text });

const asArray = (v: unknown): unknown[] | undefined => (Array.isArray(v) ? v : undefined);

export const chatShape: Shape = {
  turns: (root: Json) => asArray(root['messages']),
  walk: (root, c) => walkMessages(root['messages'] as unknown[], c),
  role: roleOf,
  calls: callIds,
  results: resultIds,
  userTurn,
};

const input = (root: Json): Json => (isObj(root['input']) ? root['input'] : {});

export const executeShape: Shape = {
  turns: (root: Json) => asArray(input(root)['messages']),
  walk: (root, c) => walkMessages(input(root)['messages'] as unknown[], c),
  role: roleOf,
  calls: callIds,
  results: resultIds,
  userTurn,
};
