import { field, isObj, jsonField, str, type Json, type PartCollector, type Shape } from './view.js';

/**
 * Anthropic Messages: `system` (a string or text blocks), `messages[{role,
 * content}]` where content is a string or blocks: `text`, `tool_use {id,
 * input}`, `tool_result {tool_use_id, content}` (a string or text blocks),
 * images and documents. A block with `cache_control` ends the cached prefix
 * (tools, then system, then messages, in that order).
 */

const hasMarker = (block: Json) => block['cache_control'] !== undefined && block['cache_control'] !== null;

function walkBlocks(blocks: unknown[], role: string, turn: number, c: PartCollector): void {
  for (const b of blocks) {
    if (!isObj(b)) continue;
    if (b['type'] === 'text' && typeof b['text'] === 'string') c.add(role, turn, role === 'assistant' ? 'assistant' : 'user', field(b, 'text'));
    else if (b['type'] === 'tool_use' && b['input'] !== undefined) c.add(role, turn, 'tool_call', jsonField(b, 'input'), str(b['name']));
    else if (b['type'] === 'tool_result') {
      if (typeof b['content'] === 'string') c.add(role, turn, 'tool_result', field(b, 'content'));
      else if (Array.isArray(b['content'])) {
        for (const inner of b['content']) if (isObj(inner) && typeof inner['text'] === 'string') c.add(role, turn, 'tool_result', field(inner, 'text'));
      }
    }
    if (hasMarker(b)) c.marker();
  }
}

function walk(root: Json, c: PartCollector): void {
  const tools = root['tools'];
  if (Array.isArray(tools) && tools.some((t) => isObj(t) && hasMarker(t))) c.marker();
  const system = root['system'];
  if (typeof system === 'string') c.add('system', -1, 'system', field(root, 'system'));
  else if (Array.isArray(system)) {
    for (const b of system) {
      if (!isObj(b)) continue;
      if (typeof b['text'] === 'string') c.add('system', -1, 'system', field(b, 'text'));
      if (hasMarker(b)) c.marker();
    }
  }
  (root['messages'] as unknown[]).forEach((m, turn) => {
    if (!isObj(m)) return;
    const role = str(m['role']) ?? '';
    if (typeof m['content'] === 'string') c.add(role, turn, role === 'assistant' ? 'assistant' : 'user', field(m, 'content'));
    else if (Array.isArray(m['content'])) walkBlocks(m['content'], role, turn, c);
  });
}

const blocks = (turn: unknown): Json[] => {
  if (!isObj(turn)) return [];
  if (typeof turn['content'] === 'string') return [{ type: 'text', text: turn['content'] }];
  return Array.isArray(turn['content']) ? turn['content'].filter(isObj) : [];
};
const ids = (turn: unknown, type: string, key: string): string[] => blocks(turn).flatMap((b) => (b['type'] === type && typeof b[key] === 'string' ? [b[key]] : []));

export const messagesShape: Shape = {
  turns: (root) => (Array.isArray(root['messages']) ? root['messages'] : undefined),
  walk,
  role: (turn) => (isObj(turn) ? (str(turn['role']) ?? '') : ''),
  calls: (turn) => ids(turn, 'tool_use', 'id'),
  results: (turn) => ids(turn, 'tool_result', 'tool_use_id'),
  userTurn: (text) => ({ role: 'user', content: [{ type: 'text', text }] }),
  // tool_result blocks must open a user message
  merge: (a, b) => {
    const all = [...blocks(a), ...blocks(b)];
    (a as Json)['content'] = [...all.filter((x) => x['type'] === 'tool_result'), ...all.filter((x) => x['type'] !== 'tool_result')];
  },
};
