import { field, isObj, jsonField, str, type Json, type PartCollector, type Shape } from './view.js';

/**
 * Bedrock Converse: `system` blocks (`text`, `cachePoint`), `messages[{role,
 * content}]` with `text`, `toolUse {toolUseId, input}`, `toolResult
 * {toolUseId, content: [{text}|{json}]}` and `cachePoint` blocks; tool specs
 * in `toolConfig.tools` may carry a `cachePoint` too. A `cachePoint` block
 * ends the cached prefix (tools, then system, then messages).
 */

function walkContent(blocks: unknown[], role: string, turn: number, c: PartCollector): void {
  for (const b of blocks) {
    if (!isObj(b)) continue;
    if (typeof b['text'] === 'string') c.add(role, turn, role === 'assistant' ? 'assistant' : 'user', field(b, 'text'));
    else if (isObj(b['toolUse']) && b['toolUse']['input'] !== undefined) c.add(role, turn, 'tool_call', jsonField(b['toolUse'], 'input'), str(b['toolUse']['name']));
    else if (isObj(b['toolResult']) && Array.isArray(b['toolResult']['content'])) {
      for (const inner of b['toolResult']['content']) {
        if (!isObj(inner)) continue;
        if (typeof inner['text'] === 'string') c.add(role, turn, 'tool_result', field(inner, 'text'));
        else if (inner['json'] !== undefined) c.add(role, turn, 'tool_result', jsonField(inner, 'json'));
      }
    } else if (b['cachePoint'] !== undefined) c.marker();
  }
}

function walk(root: Json, c: PartCollector): void {
  const toolConfig = root['toolConfig'];
  if (isObj(toolConfig) && Array.isArray(toolConfig['tools']) && toolConfig['tools'].some((t) => isObj(t) && t['cachePoint'] !== undefined)) c.marker();
  if (Array.isArray(root['system'])) {
    for (const b of root['system']) {
      if (!isObj(b)) continue;
      if (typeof b['text'] === 'string') c.add('system', -1, 'system', field(b, 'text'));
      else if (b['cachePoint'] !== undefined) c.marker();
    }
  }
  (root['messages'] as unknown[]).forEach((m, turn) => {
    if (isObj(m) && Array.isArray(m['content'])) walkContent(m['content'], str(m['role']) ?? '', turn, c);
  });
}

const blocks = (turn: unknown): Json[] => (isObj(turn) && Array.isArray(turn['content']) ? turn['content'].filter(isObj) : []);
const ids = (turn: unknown, key: string): string[] =>
  blocks(turn).flatMap((b) => {
    const v = b[key];
    return isObj(v) && typeof v['toolUseId'] === 'string' ? [v['toolUseId']] : [];
  });

export const converseShape: Shape = {
  turns: (root) => (Array.isArray(root['messages']) ? root['messages'] : undefined),
  walk,
  role: (turn) => (isObj(turn) ? (str(turn['role']) ?? '') : ''),
  calls: (turn) => ids(turn, 'toolUse'),
  results: (turn) => ids(turn, 'toolResult'),
  userTurn: (text) => ({ role: 'user', content: [{ text }] }),
  merge: (a, b) => {
    const all = [...blocks(a), ...blocks(b)];
    (a as Json)['content'] = [...all.filter((x) => x['toolResult'] !== undefined), ...all.filter((x) => x['toolResult'] === undefined)];
  },
};
