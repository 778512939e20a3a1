import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from '../../src/errors.js';
import { parseExecuteRequest } from '../../src/surfaces/execute-schema.js';

const HELLO = { messages: [{ role: 'user', content: 'hi' }] };

function fieldOf(body: unknown): unknown {
  try {
    parseExecuteRequest(body);
  } catch (err) {
    assert.ok(err instanceof GatewayError);
    assert.equal(err.type, 'request_error');
    return err.options.fields?.['field'];
  }
  assert.fail('expected a 400');
}

describe('the /v1/execute envelope', () => {
  it('accepts every documented field', () => {
    const body = {
      input: {
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: [{ type: 'text', text: 'Weather?' }] },
          { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] },
          { role: 'tool', tool_call_id: 'c1', content: '18 C' },
        ],
        tools: [{ type: 'function', function: { name: 'get_weather', description: 'd', parameters: { type: 'object' } } }],
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
      },
      target: { model: 'gpt-4o', provider: 'openai', fallbacks: ['claude-sonnet-4-5'] },
      execution: { stream: true, max_tokens: 10, temperature: 0, top_p: 1, stop: 'END', timeout_ms: 1000, reasoning: { effort: 'high' } },
      skill_overrides: { pii_redaction: 'shadow' },
      metadata: { session_id: 's', task_id: 't', team: 'x', use_case: 'y' },
    };
    assert.equal(parseExecuteRequest(body), body);
  });

  const refused: Array<[string, unknown, string]> = [
    ['a body that is not an object', [1], 'body'],
    ['a missing input', {}, 'input'],
    ['missing messages', { input: {} }, 'input.messages'],
    ['empty messages', { input: { messages: [] } }, 'input.messages'],
    ['an unknown top-level field', { input: HELLO, model: 'gpt-4o' }, 'model'],
    ['an unknown message field', { input: { messages: [{ role: 'user', content: 'x', mood: 'happy' }] } }, 'input.messages.0.mood'],
    ['a bad role', { input: { messages: [{ role: 'robot', content: 'x' }] } }, 'input.messages.0.role'],
    ['a content of the wrong type', { input: { messages: [{ role: 'user', content: 1 }] } }, 'input.messages.0.content'],
    ['a content part that is not an object', { input: { messages: [{ role: 'user', content: ['x'] }] } }, 'input.messages.0.content.0'],
    ['a tool call without arguments', { input: { messages: [{ role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f' } }] }] } }, 'input.messages.0.tool_calls.0.function.arguments'],
    ['a tool that is not a function', { input: { ...HELLO, tools: [{ type: 'web_search', function: { name: 'f' } }] } }, 'input.tools.0.type'],
    ['a tool without its function', { input: { ...HELLO, tools: [{ type: 'function' }] } }, 'input.tools.0.function'],
    ['an unknown target field', { input: HELLO, target: { region: 'eu' } }, 'target.region'],
    ['an unknown provider', { input: HELLO, target: { provider: 'acme' } }, 'target.provider'],
    ['a fallback that is not a string', { input: HELLO, target: { fallbacks: ['a', 1] } }, 'target.fallbacks.1'],
    ['max_tokens below 1', { input: HELLO, execution: { max_tokens: 0 } }, 'execution.max_tokens'],
    ['max_tokens not an integer', { input: HELLO, execution: { max_tokens: 1.5 } }, 'execution.max_tokens'],
    ['temperature above 2', { input: HELLO, execution: { temperature: 2.5 } }, 'execution.temperature'],
    ['top_p above 1', { input: HELLO, execution: { top_p: 1.1 } }, 'execution.top_p'],
    ['too many stop sequences', { input: HELLO, execution: { stop: ['a', 'b', 'c', 'd', 'e'] } }, 'execution.stop'],
    ['stream not a boolean', { input: HELLO, execution: { stream: 'yes' } }, 'execution.stream'],
    ['an unknown reasoning effort', { input: HELLO, execution: { reasoning: { effort: 'extreme' } } }, 'execution.reasoning.effort'],
    ['a skill override that is not a string', { input: HELLO, skill_overrides: { pii_redaction: true } }, 'skill_overrides.pii_redaction'],
    ['an unknown metadata field', { input: HELLO, metadata: { user: 'u' } }, 'metadata.user'],
  ];
  for (const [name, body, field] of refused) {
    it(`refuses ${name}, naming ${field}`, () => assert.equal(fieldOf(body), field));
  }

  const messageOf = (body: unknown): string => {
    try {
      parseExecuteRequest(body);
    } catch (err) {
      return (err as Error).message;
    }
    return assert.fail('expected a 400');
  };

  it('a value of one of a field\'s accepted types is told what that type requires; a value of none, which types it may have', () => {
    assert.equal(messageOf({ input: HELLO, execution: { stop: [] } }), 'execution.stop: must NOT have fewer than 1 items');
    assert.equal(messageOf({ input: HELLO, execution: { stop: ['a', 'b', 'c', 'd', 'e'] } }), 'execution.stop: must NOT have more than 4 items');
    assert.equal(messageOf({ input: HELLO, execution: { stop: '' } }), 'execution.stop: must NOT have fewer than 1 characters');
    assert.equal(messageOf({ input: HELLO, execution: { stop: 5 } }), 'execution.stop: must be string or array');
    assert.equal(messageOf({ input: { messages: [{ role: 'user', content: 1 }] } }), 'input.messages.0.content: must be string or array or null');
  });
});
