import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cachedValidators, toolCallFidelity } from '../../src/lifecycle/tool-fidelity.js';

const weather = {
  type: 'function',
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1 } }, required: ['city'], additionalProperties: false } },
};
const request = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'weather?' }], tools: [weather] };
const reply = (calls: Array<{ name: string; arguments: string }> | undefined) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  choices: [{ index: 0, message: { role: 'assistant', content: null, ...(calls && { tool_calls: calls.map((f, i) => ({ id: `call_${i}`, type: 'function', function: f })) }) }, finish_reason: 'tool_calls' }],
});

describe('tool-call fidelity', () => {
  it('null when the request declared no tools', () => {
    assert.equal(toolCallFidelity({ messages: [] }, reply([{ name: 'x', arguments: '{}' }])), null);
  });

  it('true for calls whose arguments validate, and for a reply that calls nothing', () => {
    assert.equal(toolCallFidelity(request, reply([{ name: 'get_weather', arguments: '{"city":"Oslo","days":2}' }])), true);
    assert.equal(toolCallFidelity(request, reply(undefined)), true);
  });

  it('false for arguments that break the schema, do not parse, or a tool never declared', () => {
    assert.equal(toolCallFidelity(request, reply([{ name: 'get_weather', arguments: '{"days":0}' }])), false);
    assert.equal(toolCallFidelity(request, reply([{ name: 'get_weather', arguments: '{"city":"Oslo"' }])), false);
    assert.equal(toolCallFidelity(request, reply([{ name: 'get_time', arguments: '{}' }])), false);
    assert.equal(toolCallFidelity(request, reply([{ name: 'get_weather', arguments: '{"city":"Oslo","extra":1}' }])), false);
  });

  it('validators are cached by schema and bounded', () => {
    for (let i = 0; i < 400; i++) {
      const tool = { type: 'function', function: { name: 't', parameters: { type: 'object', properties: { [`p${i}`]: { type: 'string' } } } } };
      assert.equal(toolCallFidelity({ tools: [tool] }, reply([{ name: 't', arguments: '{}' }])), true);
    }
    assert.ok(cachedValidators() <= 256, `at most 256 validators kept (got ${cachedValidators()})`);
  });
});
