import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { promptTextParts, type BodyShape } from '../../src/skills/guardrails/index.js';

const CASES: Record<BodyShape, unknown> = {
  chat_completions: {
    model: 'gpt-4o',
    messages: [
      { role: 'system', content: 'S' },
      { role: 'developer', content: [{ type: 'text', text: 'D' }] },
      { role: 'user', content: [{ type: 'text', text: 'U1' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
      { role: 'assistant', content: 'not the caller' },
      { role: 'tool', tool_call_id: 't', content: 'tool output' },
      { role: 'user', content: 'U2' },
    ],
  },
  native: { input: { messages: [{ role: 'system', content: 'S' }, { role: 'user', content: 'U1' }, { role: 'assistant', content: 'no' }, { role: 'user', content: 'U2' }] }, target: { model: 'gpt-4o' } },
  responses: {
    instructions: 'S',
    input: [
      { role: 'developer', content: 'D' },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'U1' }, { type: 'input_image', image_url: 'x' }] },
      { type: 'function_call_output', call_id: 'c', output: 'tool output' },
      { role: 'assistant', content: [{ type: 'output_text', text: 'no' }] },
      { role: 'user', content: 'U2' },
    ],
  },
  messages: {
    system: [{ type: 'text', text: 'S', cache_control: { type: 'ephemeral' } }],
    messages: [
      { role: 'user', content: 'U1' },
      { role: 'assistant', content: [{ type: 'text', text: 'no' }, { type: 'tool_use', id: 't', name: 'f', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'tool output' }, { type: 'text', text: 'U2' }] },
    ],
  },
  generate_content: {
    systemInstruction: { parts: [{ text: 'S' }] },
    contents: [
      { role: 'user', parts: [{ text: 'U1' }, { inlineData: { mimeType: 'image/png', data: 'AAAA' } }] },
      { role: 'model', parts: [{ text: 'no' }] },
      { parts: [{ text: 'U2' }] },
    ],
  },
  converse: {
    system: [{ text: 'S' }, { cachePoint: { type: 'default' } }],
    messages: [
      { role: 'user', content: [{ text: 'U1' }] },
      { role: 'assistant', content: [{ text: 'no' }] },
      { role: 'user', content: [{ toolResult: { toolUseId: 't', content: [{ text: 'tool output' }] } }, { text: 'U2' }] },
    ],
  },
};

const EXPECTED: Record<BodyShape, string[]> = {
  chat_completions: ['S', 'D', 'U1', 'U2'],
  native: ['S', 'U1', 'U2'],
  responses: ['S', 'D', 'U1', 'U2'],
  messages: ['S', 'U1', 'U2'],
  generate_content: ['S', 'U1', 'U2'],
  converse: ['S', 'U1', 'U2'],
};

describe('the caller prompt text of each body shape', () => {
  for (const shape of Object.keys(CASES) as BodyShape[]) {
    it(`${shape}: system and user text in order; assistant, tool and non-text parts left out`, () => {
      assert.deepEqual(promptTextParts(shape, CASES[shape]), EXPECTED[shape]);
    });
  }

  it('reads plain-string forms: responses input, Anthropic system, Gemini snake_case system_instruction', () => {
    assert.deepEqual(promptTextParts('responses', { input: 'just text' }), ['just text']);
    assert.deepEqual(promptTextParts('messages', { system: 'S', messages: [] }), ['S']);
    assert.deepEqual(promptTextParts('generate_content', { system_instruction: { parts: [{ text: 'S' }] }, contents: [] }), ['S']);
  });

  it('yields nothing from malformed bodies instead of throwing', () => {
    for (const shape of Object.keys(CASES) as BodyShape[]) {
      for (const body of [null, 'x', 42, [], { messages: 'no' }, { input: { messages: [null, 1] } }, { contents: [null, { role: 'user' }] }]) {
        assert.deepEqual(promptTextParts(shape, body), [], `${shape} ${JSON.stringify(body)}`);
      }
    }
  });
});
