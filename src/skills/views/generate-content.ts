import { field, isObj, jsonField, str, type Json, type PartCollector, type Shape } from './view.js';

/**
 * Gemini generateContent: `systemInstruction.parts[].text` and
 * `contents[{role: "user"|"model", parts}]` with `text`, `functionCall {name,
 * args, id?}` and `functionResponse {name, response, id?}` parts. A call and
 * its response pair by `id` when given, else by function name. Cached
 * context is a separate resource (`cachedContent`), so no part is marked.
 */

function walk(root: Json, c: PartCollector): void {
  const sys = root['systemInstruction'] ?? root['system_instruction'];
  if (isObj(sys) && Array.isArray(sys['parts'])) {
    for (const p of sys['parts']) if (isObj(p) && typeof p['text'] === 'string') c.add('system', -1, 'system', field(p, 'text'));
  }
  (root['contents'] as unknown[]).forEach((turnObj, turn) => {
    if (!isObj(turnObj) || !Array.isArray(turnObj['parts'])) return;
    const role = str(turnObj['role']) ?? 'user';
    for (const p of turnObj['parts']) {
      if (!isObj(p)) continue;
      if (typeof p['text'] === 'string') {
        if (p['thought'] !== true) c.add(role, turn, role === 'model' ? 'assistant' : 'user', field(p, 'text'));
      } else if (isObj(p['functionCall']) && p['functionCall']['args'] !== undefined) c.add(role, turn, 'tool_call', jsonField(p['functionCall'], 'args'), str(p['functionCall']['name']));
      else if (isObj(p['functionResponse']) && p['functionResponse']['response'] !== undefined) c.add(role, turn, 'tool_result', jsonField(p['functionResponse'], 'response'));
    }
  });
}

const partsOf = (turn: unknown): Json[] => (isObj(turn) && Array.isArray(turn['parts']) ? turn['parts'].filter(isObj) : []);
const ids = (turn: unknown, key: string): string[] =>
  partsOf(turn).flatMap((p) => {
    const f = p[key];
    if (!isObj(f)) return [];
    return [str(f['id']) ?? `name:${str(f['name']) ?? ''}`];
  });

export const generateContentShape: Shape = {
  turns: (root) => (Array.isArray(root['contents']) ? root['contents'] : undefined),
  walk,
  role: (turn) => (isObj(turn) ? (str(turn['role']) ?? 'user') : ''),
  calls: (turn) => ids(turn, 'functionCall'),
  results: (turn) => ids(turn, 'functionResponse'),
  userTurn: (text) => ({ role: 'user', parts: [{ text }] }),
  merge: (a, b) => {
    const all = [...partsOf(a), ...partsOf(b)];
    (a as Json)['parts'] = [...all.filter((p) => p['functionResponse'] !== undefined), ...all.filter((p) => p['functionResponse'] === undefined)];
  },
};
