/**
 * Each vendor's documented rules for tool calls in a conversation, checked on
 * a request body: what the vendor answers 400 for. Returns the broken rules
 * (empty when the body is valid).
 *
 * - OpenAI chat: a `tool` message must answer a `tool_calls` id of the
 *   assistant message before it, and every call id must be answered before
 *   the next non-tool message.
 * - OpenAI Responses: every `function_call_output` answers an earlier
 *   `function_call` with its `call_id`, and every call gets its output.
 * - Anthropic Messages / Bedrock Converse: roles alternate starting with
 *   user; each assistant tool use is answered by a tool result in the very
 *   next user message, results first in it; no result without its use.
 * - Gemini: roles alternate user/model starting with user; each model turn's
 *   function calls are answered by function responses in the next user turn.
 */
type J = Record<string, unknown>;
const arr = (v: unknown): J[] => (Array.isArray(v) ? (v as J[]) : []);
const o = (v: unknown): J => (typeof v === 'object' && v !== null ? (v as J) : {});

function chat(messages: J[]): string[] {
  const errors: string[] = [];
  let open = new Set<string>();
  for (const [i, m] of messages.entries()) {
    if (m['role'] === 'tool') {
      const id = m['tool_call_id'] as string;
      if (!open.delete(id)) errors.push(`message ${i}: tool result ${id} answers no open call`);
      continue;
    }
    if (open.size > 0) errors.push(`message ${i}: calls ${[...open].join(',')} unanswered`);
    open = new Set(arr(m['tool_calls']).map((c) => c['id'] as string));
  }
  if (open.size > 0) errors.push(`calls ${[...open].join(',')} unanswered at the end`);
  return errors;
}

function responses(input: J[]): string[] {
  const errors: string[] = [];
  const calls = new Set<string>();
  const answered = new Set<string>();
  for (const [i, item] of input.entries()) {
    if (item['type'] === 'function_call') calls.add(item['call_id'] as string);
    if (item['type'] === 'function_call_output') {
      const id = item['call_id'] as string;
      if (!calls.has(id)) errors.push(`item ${i}: output ${id} has no call before it`);
      answered.add(id);
    }
  }
  for (const id of calls) if (!answered.has(id)) errors.push(`call ${id} has no output`);
  return errors;
}

/** Messages and Converse share the rule; only the block spelling differs. */
function alternating(turns: J[], blocks: (t: J) => J[], useId: (b: J) => string | undefined, resultId: (b: J) => string | undefined, userRole = 'user'): string[] {
  const errors: string[] = [];
  if (turns[0]?.['role'] !== userRole) errors.push('the first turn is not the user');
  let open: string[] = [];
  for (const [i, t] of turns.entries()) {
    if (i > 0 && t['role'] === turns[i - 1]!['role']) errors.push(`turn ${i}: two ${String(t['role'])} turns in a row`);
    const bs = blocks(t);
    const results = bs.map(resultId).filter((x): x is string => x !== undefined);
    const firstOther = bs.findIndex((b) => resultId(b) === undefined);
    if (firstOther >= 0 && bs.slice(firstOther).some((b) => resultId(b) !== undefined)) errors.push(`turn ${i}: tool results do not come first`);
    if (open.length > 0 || results.length > 0) {
      const want = [...open].sort().join(',');
      const got = [...results].sort().join(',');
      if (want !== got) errors.push(`turn ${i}: results [${got}] do not answer calls [${want}]`);
    }
    open = bs.map(useId).filter((x): x is string => x !== undefined);
  }
  if (open.length > 0) errors.push(`calls ${open.join(',')} unanswered at the end`);
  return errors;
}

const content = (t: J): J[] => (typeof t['content'] === 'string' ? [{ type: 'text' }] : arr(t['content']));

export function toolRuleErrors(surface: string, body: J): string[] {
  switch (surface) {
    case 'chat_completions':
    case 'cloudx':
      return chat(arr(body['messages']));
    case 'execute':
      return chat(arr(o(body['input'])['messages']));
    case 'responses':
      return responses(arr(body['input']));
    case 'messages':
      return alternating(
        arr(body['messages']),
        content,
        (b) => (b['type'] === 'tool_use' ? (b['id'] as string) : undefined),
        (b) => (b['type'] === 'tool_result' ? (b['tool_use_id'] as string) : undefined),
      );
    case 'converse':
      return alternating(
        arr(body['messages']),
        content,
        (b) => (o(b['toolUse'])['toolUseId'] as string | undefined),
        (b) => (o(b['toolResult'])['toolUseId'] as string | undefined),
      );
    case 'generate_content':
      return alternating(
        arr(body['contents']),
        (t) => arr(t['parts']),
        (p) => (p['functionCall'] === undefined ? undefined : String(o(p['functionCall'])['id'] ?? o(p['functionCall'])['name'])),
        (p) => (p['functionResponse'] === undefined ? undefined : String(o(p['functionResponse'])['id'] ?? o(p['functionResponse'])['name'])),
      );
    default:
      throw new Error(`no tool rules for ${surface}`);
  }
}
