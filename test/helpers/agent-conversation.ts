/**
 * An agent's conversation in every vendor shape: a system prompt, the task,
 * `rounds` tool calls each answered by a long result, an assistant note and a
 * last user turn. Each round's call has its own id (Gemini's too), so pairing
 * is by id everywhere.
 */

export const AGENT_SURFACES = ['chat_completions', 'execute', 'responses', 'messages', 'generate_content', 'converse'] as const;
export type AgentSurface = (typeof AGENT_SURFACES)[number];

export interface AgentOptions {
  rounds?: number;
  /** lines in each tool result (about 12 tokens each) */
  resultLines?: number;
  /** messages/converse: a prompt-cache marker after the system prompt ('system') or on the last tool result ('late') */
  marker?: 'system' | 'late';
  model?: string;
}

const SYSTEM = 'You are a careful coding agent. Read files before editing them.';
const TASK = 'Find where the retry budget is computed and explain it.';
const NOTE = 'I have read the files; the budget is computed in src/retry.ts.';
const LAST = 'Go on and propose the patch.';

const callId = (i: number) => `call_${i}`;
const args = (i: number) => ({ path: `src/module${i}.ts`, start: 1, end: 200 });
export const result = (i: number, lines: number) => Array.from({ length: lines }, (_, k) => `${k + 1}: export const value${i}_${k} = compute(${k}, "module ${i}");`).join('\n');

export function agentBody(surface: AgentSurface, o: AgentOptions = {}): Record<string, unknown> {
  const rounds = o.rounds ?? 8;
  const lines = o.resultLines ?? 60;
  const idx = Array.from({ length: rounds }, (_, i) => i);
  const marker = { type: 'ephemeral' };
  switch (surface) {
    case 'chat_completions':
    case 'execute': {
      const messages = [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: TASK },
        ...idx.flatMap((i) => [
          { role: 'assistant', content: null, tool_calls: [{ id: callId(i), type: 'function', function: { name: 'read_file', arguments: JSON.stringify(args(i)) } }] },
          { role: 'tool', tool_call_id: callId(i), content: result(i, lines) },
        ]),
        { role: 'assistant', content: NOTE },
        { role: 'user', content: LAST },
      ];
      return surface === 'execute' ? { target: { model: o.model ?? 'gpt-4o' }, input: { messages } } : { model: o.model ?? 'gpt-4o', messages };
    }
    case 'responses':
      return {
        model: o.model ?? 'gpt-4.1',
        instructions: SYSTEM,
        input: [
          { role: 'user', content: [{ type: 'input_text', text: TASK }] },
          ...idx.flatMap((i) => [
            { type: 'function_call', call_id: callId(i), name: 'read_file', arguments: JSON.stringify(args(i)) },
            { type: 'function_call_output', call_id: callId(i), output: result(i, lines) },
          ]),
          { role: 'assistant', content: [{ type: 'output_text', text: NOTE }] },
          { role: 'user', content: LAST },
        ],
      };
    case 'messages':
      return {
        model: o.model ?? 'claude-sonnet-4-5',
        max_tokens: 1024,
        system: [{ type: 'text', text: SYSTEM, ...(o.marker === 'system' ? { cache_control: marker } : {}) }],
        messages: [
          { role: 'user', content: TASK },
          ...idx.flatMap((i) => [
            { role: 'assistant', content: [{ type: 'text', text: `Reading module ${i}.` }, { type: 'tool_use', id: callId(i), name: 'read_file', input: args(i) }] },
            {
              role: 'user',
              content: [{ type: 'tool_result', tool_use_id: callId(i), content: result(i, lines), ...(o.marker === 'late' && i === rounds - 1 ? { cache_control: marker } : {}) }],
            },
          ]),
          { role: 'assistant', content: NOTE },
          { role: 'user', content: LAST },
        ],
      };
    case 'generate_content':
      return {
        systemInstruction: { parts: [{ text: SYSTEM }] },
        contents: [
          { role: 'user', parts: [{ text: TASK }] },
          ...idx.flatMap((i) => [
            { role: 'model', parts: [{ functionCall: { id: callId(i), name: 'read_file', args: args(i) } }] },
            { role: 'user', parts: [{ functionResponse: { id: callId(i), name: 'read_file', response: { content: result(i, lines) } } }] },
          ]),
          { role: 'model', parts: [{ text: NOTE }] },
          { role: 'user', parts: [{ text: LAST }] },
        ],
      };
    case 'converse':
      return {
        system: [{ text: SYSTEM }, ...(o.marker === 'system' ? [{ cachePoint: { type: 'default' } }] : [])],
        messages: [
          { role: 'user', content: [{ text: TASK }] },
          ...idx.flatMap((i) => [
            { role: 'assistant', content: [{ text: `Reading module ${i}.` }, { toolUse: { toolUseId: callId(i), name: 'read_file', input: args(i) } }] },
            {
              role: 'user',
              content: [{ toolResult: { toolUseId: callId(i), content: [{ text: result(i, lines) }] } }, ...(o.marker === 'late' && i === rounds - 1 ? [{ cachePoint: { type: 'default' } }] : [])],
            },
          ]),
          { role: 'assistant', content: [{ text: NOTE }] },
          { role: 'user', content: [{ text: LAST }] },
        ],
      };
  }
}
