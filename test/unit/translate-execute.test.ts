import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readVendorError } from '../../src/providers/vendor-error.js';
import { envelopeField, executionReply, type ExecutionContext } from '../../src/translate/execute.js';

const ctx: ExecutionContext = { id: 'req-1', created: 1_700_000_000, model: 'gpt-4o-mini', provider: 'openai', trace: () => ({ served_by: 'pipeline' }) };
const chunk = (delta: Record<string, unknown>, finish: string | null = null) => `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/** the events of what the stream wrote */
const events = (text: string) =>
  text
    .split('\n\n')
    .filter(Boolean)
    .map((b) => ({ event: b.split('\n')[0]?.slice(7), data: JSON.parse(b.split('\n')[1]?.slice(6) ?? 'null') as Record<string, unknown> }));

describe('chat completions → the execution reply', () => {
  it('converts a stream split anywhere, folding tool-call fragments into the completed reply', () => {
    const wire =
      chunk({ role: 'assistant', content: '' }) +
      chunk({ reasoning_content: 'Hmm.' }) +
      chunk({ content: 'Hi' }) +
      chunk({ tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'f', arguments: '' } }] }) +
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] }) +
      chunk({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] }) +
      chunk({}, 'tool_calls') +
      `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 4 } } })}\n\n` +
      'data: [DONE]\n\n';
    const s = executionReply(ctx, undefined).stream();
    let out = '';
    // three bytes at a time: events cut mid-line and mid-UTF-8 still come out whole
    for (let i = 0; i < wire.length; i += 3) out += s.push(Buffer.from(wire.slice(i, i + 3))) ?? '';
    out += s.end() ?? '';
    const evs = events(out);
    assert.deepEqual(
      evs.map((e) => e.event),
      ['execution.started', 'output.delta', 'output.delta', 'output.delta', 'output.delta', 'output.delta', 'execution.completed'],
    );
    assert.deepEqual(evs[0]?.data, { id: 'req-1', model: 'gpt-4o-mini', provider: 'openai' });
    assert.deepEqual(evs[3]?.data, { tool_calls: [{ index: 0, id: 'c1', name: 'f' }] });
    const done = evs[6]?.data ?? {};
    assert.deepEqual(done['output'], { role: 'assistant', content: 'Hi', reasoning: 'Hmm.', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] });
    assert.equal(done['finish_reason'], 'tool_calls');
    assert.deepEqual(done['usage'], { tokens_in: 10, tokens_out: 3, tokens_cached: 4, cost_usd: (6 * 0.15 + 4 * 0.075 + 3 * 0.6) / 1e6 });
    assert.ok(!out.includes('[DONE]'));
  });

  it('ends a stream that stops short with an error event, and a vendor error in the stream likewise', () => {
    const cut = executionReply(ctx, undefined).stream();
    const out = String(cut.push(Buffer.from(chunk({ content: 'Hi' }))) ?? '') + (cut.end() ?? '');
    const last = events(out).pop();
    assert.equal(last?.event, 'error');
    assert.equal((last?.data['error'] as Record<string, unknown>)['type'], 'upstream_truncated');
    const failed = executionReply(ctx, undefined).stream();
    const text = String(failed.push(Buffer.from(`data: ${JSON.stringify({ error: { message: 'Overloaded', type: 'overloaded_error' } })}\n\n`)) ?? '');
    assert.deepEqual(events(text).pop(), { event: 'error', data: { error: { message: 'Overloaded', type: 'overloaded_error', code: 502 } } });
    assert.equal(failed.end(), undefined, 'nothing follows the error');
  });

  it('answers a vendor error in the shared envelope with the vendor’s own type', () => {
    const error = executionReply(ctx, undefined).error;
    const read = (status: number, body: unknown, headers = {}) => JSON.parse(error(status, Buffer.from(JSON.stringify(body)), headers).toString()) as unknown;
    assert.deepEqual(read(429, { error: { message: 'slow down', type: 'rate_limit_exceeded', code: null } }), { error: { message: 'slow down', type: 'rate_limit_exceeded', code: 429 } });
    assert.deepEqual(read(529, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }), { error: { message: 'Overloaded', type: 'overloaded_error', code: 529 } });
    assert.deepEqual(read(400, { error: { code: 400, message: 'bad', status: 'INVALID_ARGUMENT' } }), { error: { message: 'bad', type: 'INVALID_ARGUMENT', code: 400 } });
    assert.deepEqual(read(429, { message: 'Too many' }, { 'x-amzn-errortype': 'ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/' }), {
      error: { message: 'Too many', type: 'ThrottlingException', code: 429 },
    });
    assert.deepEqual(readVendorError(502, Buffer.from('<html>bad gateway</html>'), {}), { type: 'http_502', message: '<html>bad gateway</html>' });
  });

  it('renames a chat-completions field to where it sits in the envelope', () => {
    assert.equal(envelopeField('messages[2].content[0].type'), 'input.messages.2.content.0.type');
    assert.equal(envelopeField('tools[1].function.parameters'), 'input.tools.1.function.parameters');
    assert.equal(envelopeField('max_tokens'), 'execution.max_tokens');
    assert.equal(envelopeField('reasoning_effort'), 'execution.reasoning.effort');
    assert.equal(envelopeField('tool_choice'), 'input.tool_choice');
    assert.equal(envelopeField('x-gw-aws-region'), 'x-gw-aws-region');
  });
});
