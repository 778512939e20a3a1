import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { viewOf } from '../../src/skills/views/index.js';

/**
 * One conversation in every vendor shape: system text, a user question, an
 * assistant tool call, its result, an assistant answer and a final user turn.
 * The same cases run over each shape.
 */
interface Shape {
  surface: string;
  body: () => Record<string, unknown>;
  /** the turn array in the body */
  turns: (b: Record<string, unknown>) => unknown[];
  /** whether the shape has a cache marker after the first user turn */
  marked: boolean;
}

const SHAPES: Shape[] = [
  {
    surface: 'chat_completions',
    marked: false,
    turns: (b) => b['messages'] as unknown[],
    body: () => ({
      model: 'gpt-4o',
      temperature: 0.25,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'Weather in Oslo?' }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'rain, 9C' },
        { role: 'assistant', content: 'Rainy, 9C.' },
        { role: 'user', content: 'Thanks!' },
      ],
    }),
  },
  {
    surface: 'execute',
    marked: false,
    turns: (b) => (b['input'] as { messages: unknown[] }).messages,
    body: () => ({
      target: { model: 'gpt-4o' },
      input: {
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Weather in Oslo?' },
          { role: 'assistant', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }] },
          { role: 'tool', tool_call_id: 'c1', content: 'rain, 9C' },
          { role: 'assistant', content: 'Rainy, 9C.' },
          { role: 'user', content: 'Thanks!' },
        ],
      },
    }),
  },
  {
    surface: 'responses',
    marked: false,
    turns: (b) => b['input'] as unknown[],
    body: () => ({
      model: 'gpt-4.1',
      instructions: 'Be brief.',
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'Weather in Oslo?' }] },
        { type: 'function_call', call_id: 'c1', name: 'weather', arguments: '{"city":"Oslo"}' },
        { type: 'function_call_output', call_id: 'c1', output: 'rain, 9C' },
        { role: 'assistant', content: [{ type: 'output_text', text: 'Rainy, 9C.' }] },
        { role: 'user', content: 'Thanks!' },
      ],
    }),
  },
  {
    surface: 'messages',
    marked: true,
    turns: (b) => b['messages'] as unknown[],
    body: () => ({
      model: 'claude-sonnet-4-5',
      max_tokens: 100,
      system: [{ type: 'text', text: 'Be brief.' }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Weather in Oslo?', cache_control: { type: 'ephemeral' } }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'c1', name: 'weather', input: { city: 'Oslo' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c1', content: 'rain, 9C' }] },
        { role: 'assistant', content: 'Rainy, 9C.' },
        { role: 'user', content: 'Thanks!' },
      ],
    }),
  },
  {
    surface: 'generate_content',
    marked: false,
    turns: (b) => b['contents'] as unknown[],
    body: () => ({
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      generationConfig: { temperature: 0.25 },
      contents: [
        { role: 'user', parts: [{ text: 'Weather in Oslo?' }] },
        { role: 'model', parts: [{ functionCall: { name: 'weather', args: { city: 'Oslo' } } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'weather', response: { result: 'rain, 9C' } } }] },
        { role: 'model', parts: [{ text: 'Rainy, 9C.' }] },
        { role: 'user', parts: [{ text: 'Thanks!' }] },
      ],
    }),
  },
  {
    surface: 'converse',
    marked: true,
    turns: (b) => b['messages'] as unknown[],
    body: () => ({
      system: [{ text: 'Be brief.' }],
      inferenceConfig: { temperature: 0.25 },
      messages: [
        { role: 'user', content: [{ text: 'Weather in Oslo?' }, { cachePoint: { type: 'default' } }] },
        { role: 'assistant', content: [{ toolUse: { toolUseId: 'c1', name: 'weather', input: { city: 'Oslo' } } }] },
        { role: 'user', content: [{ toolResult: { toolUseId: 'c1', content: [{ text: 'rain, 9C' }] } }] },
        { role: 'assistant', content: [{ text: 'Rainy, 9C.' }] },
        { role: 'user', content: [{ text: 'Thanks!' }] },
      ],
    }),
  },
];

const parse = (bytes: Uint8Array) => JSON.parse(Buffer.from(bytes).toString('utf8')) as Record<string, unknown>;

for (const shape of SHAPES) {
  describe(`message view: ${shape.surface}`, () => {
    test('lists the text parts by kind in document order, system first', () => {
      const view = viewOf(shape.surface, shape.body())!;
      const parts = view.parts();
      assert.deepEqual(
        parts.map((p) => p.kind),
        ['system', 'user', 'tool_call', 'tool_result', 'assistant', 'user'],
      );
      // system instructions come before the first turn (or are a turn of their own, on chat shapes)
      assert.ok(parts[0]!.turn < parts[1]!.turn);
      assert.equal(parts[0]!.text, 'Be brief.');
      assert.equal(parts[1]!.text, 'Weather in Oslo?');
      assert.deepEqual(JSON.parse(parts[2]!.text), { city: 'Oslo' });
      assert.match(parts[3]!.text, /rain, 9C/);
      assert.equal(parts.at(-1)!.text, 'Thanks!');
      assert.equal(parts.at(-1)!.turn, view.turnCount() - 1);
    });

    test('marks the parts at or before a prompt-cache marker, and only those', () => {
      const parts = viewOf(shape.surface, shape.body())!.parts();
      assert.deepEqual(
        parts.map((p) => p.cacheMarked),
        shape.marked ? [true, true, false, false, false, false] : [false, false, false, false, false, false],
      );
    });

    test('replaces one part and writes the same vendor shape back, other fields untouched', () => {
      const original = shape.body();
      const view = viewOf(shape.surface, shape.body())!;
      assert.equal(view.changed(), false);
      const user = view.parts().find((p) => p.kind === 'user')!;
      view.replace(user.id, 'Weather in Bergen?');
      assert.equal(view.changed(), true);
      const out = parse(view.serialize());
      const again = viewOf(shape.surface, out)!.parts();
      assert.equal(again[user.id]!.text, 'Weather in Bergen?');
      // put the text back: the body is the original again, every other field as it was
      const restored = viewOf(shape.surface, out)!;
      restored.replace(user.id, 'Weather in Oslo?');
      assert.deepEqual(parse(restored.serialize()), original);
    });

    test('a structured tool field takes JSON back', () => {
      const view = viewOf(shape.surface, shape.body())!;
      const call = view.parts().find((p) => p.kind === 'tool_call')!;
      view.replace(call.id, call.text.replace('Oslo', 'Bergen'));
      assert.deepEqual(JSON.parse(viewOf(shape.surface, parse(view.serialize()))!.parts().find((p) => p.kind === 'tool_call')!.text), { city: 'Bergen' });
    });

    test('folding a tool call without its result is refused; the pair folds into one summary turn', () => {
      const view = viewOf(shape.surface, shape.body())!;
      const callTurn = view.parts().find((p) => p.kind === 'tool_call')!.turn;
      const before = view.turnCount();
      assert.equal(view.fold(callTurn, callTurn + 1, 'summary'), false);
      assert.equal(view.changed(), false);
      assert.equal(view.fold(callTurn, callTurn + 3, 'Earlier: the weather tool said rain, 9C in Oslo.'), true);
      const out = parse(view.serialize());
      const parts = viewOf(shape.surface, out)!.parts();
      assert.ok(!parts.some((p) => p.kind === 'tool_call' || p.kind === 'tool_result'));
      assert.ok(parts.some((p) => p.text === 'Earlier: the weather tool said rain, 9C in Oslo.'));
      const turns = shape.turns(out);
      assert.ok(turns.length < before);
      // vendors that require alternation get no two adjacent turns of one role
      if (shape.surface === 'messages' || shape.surface === 'converse' || shape.surface === 'generate_content') {
        const roles = turns.map((t) => (t as { role: string }).role);
        assert.ok(roles.every((r, i) => i === 0 || r !== roles[i - 1]), roles.join(','));
      }
    });

    test('dropping turns without a summary keeps the pairing rule', () => {
      const view = viewOf(shape.surface, shape.body())!;
      const resultTurn = view.parts().find((p) => p.kind === 'tool_result')!.turn;
      assert.equal(view.fold(resultTurn, resultTurn + 1), false);
      assert.equal(view.fold(resultTurn - 1, resultTurn + 1), true);
      assert.ok(!viewOf(shape.surface, parse(view.serialize()))!.parts().some((p) => p.kind === 'tool_result'));
    });
  });
}

test('a surface without a message shape, or a body without turns, has no view', () => {
  assert.equal(viewOf('count_tokens', { messages: [] }), undefined);
  assert.equal(viewOf('chat_completions', { prompt: 'x' }), undefined);
  assert.equal(viewOf('messages', [1, 2]), undefined);
});

test('responses: a string input is one user part', () => {
  const view = viewOf('responses', { model: 'm', input: 'hello' })!;
  assert.deepEqual(
    view.parts().map((p) => [p.kind, p.text]),
    [['user', 'hello']],
  );
  view.replace(0, 'bye');
  assert.deepEqual(parse(view.serialize()), { model: 'm', input: 'bye' });
});
