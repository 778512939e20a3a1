import { field, isObj, str, type Json, type PartCollector, type PartKind, type Shape } from './view.js';

/**
 * OpenAI Responses: `instructions` (system text) and `input`, a string (one
 * user turn) or items: messages `{role, content}` (a string or
 * `input_text`/`output_text` parts), `function_call {call_id, arguments}` and
 * `function_call_output {call_id, output}`. Every item is a turn; no inline
 * prompt-cache marker exists in this shape.
 */

const KIND: Readonly<Record<string, PartKind>> = { system: 'system', developer: 'system', user: 'user', assistant: 'assistant' };

function walkItem(item: unknown, turn: number, c: PartCollector): void {
  if (!isObj(item)) return;
  const type = str(item['type']) ?? 'message';
  if (type === 'message') {
    const role = str(item['role']) ?? '';
    const kind = KIND[role];
    if (kind === undefined) return;
    if (typeof item['content'] === 'string') c.add(role, turn, kind, field(item, 'content'));
    else if (Array.isArray(item['content'])) {
      for (const p of item['content']) if (isObj(p) && typeof p['text'] === 'string') c.add(role, turn, kind, field(p, 'text'));
    }
  } else if (type === 'function_call' && typeof item['arguments'] === 'string') c.add('assistant', turn, 'tool_call', field(item, 'arguments'), str(item['name']));
  else if (type === 'function_call_output') {
    if (typeof item['output'] === 'string') c.add('tool', turn, 'tool_result', field(item, 'output'));
    else if (Array.isArray(item['output'])) {
      for (const p of item['output']) if (isObj(p) && typeof p['text'] === 'string') c.add('tool', turn, 'tool_result', field(p, 'text'));
    }
  }
}

function walk(root: Json, c: PartCollector): void {
  if (typeof root['instructions'] === 'string') c.add('system', -1, 'system', field(root, 'instructions'));
  const input = root['input'];
  if (typeof input === 'string') c.add('user', 0, 'user', field(root, 'input'));
  else if (Array.isArray(input)) input.forEach((item, turn) => walkItem(item, turn, c));
}

const idOf = (turn: unknown, type: string): string[] => (isObj(turn) && turn['type'] === type && typeof turn['call_id'] === 'string' ? [turn['call_id']] : []);

export const responsesShape: Shape = {
  turns: (root) => (Array.isArray(root['input']) ? root['input'] : typeof root['input'] === 'string' ? [] : undefined),
  walk,
  role: (turn) => (isObj(turn) ? (str(turn['role']) ?? (turn['type'] === 'function_call_output' ? 'tool' : 'assistant')) : ''),
  calls: (turn) => idOf(turn, 'function_call'),
  results: (turn) => idOf(turn, 'function_call_output'),
  userTurn: (text) => ({ role: 'user', content: text }),
};
