import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { costUsd } from '../../src/providers/catalog.js';
import { periodOf, requestedOutputTokens, worstCaseUsd } from '../../src/tenancy/spend-cap.js';

const body = (v: unknown) => Buffer.from(JSON.stringify(v));

describe('spend-cap periods', () => {
  it('a day period runs from UTC midnight to the next', () => {
    const p = periodOf(Date.parse('2026-03-31T23:59:59.999Z'), 'day');
    assert.equal(p.id, '2026-03-31');
    assert.equal(new Date(p.start).toISOString(), '2026-03-31T00:00:00.000Z');
    assert.equal(new Date(p.end).toISOString(), '2026-04-01T00:00:00.000Z');
  });

  it('a month period is the calendar month, across the year end too', () => {
    const p = periodOf(Date.parse('2026-12-15T12:00:00Z'), 'month');
    assert.equal(p.id, '2026-12');
    assert.equal(new Date(p.end).toISOString(), '2027-01-01T00:00:00.000Z');
    assert.equal(periodOf(Date.parse('2027-01-01T00:00:00Z'), 'month').id, '2027-01');
  });
});

describe('output limit of a request, by every surface\'s field name', () => {
  it('reads max_tokens, max_completion_tokens, max_output_tokens, maxTokens and maxOutputTokens', () => {
    assert.equal(requestedOutputTokens(body({ model: 'gpt-4o', max_tokens: 300 })), 300);
    assert.equal(requestedOutputTokens(body({ max_completion_tokens: 42 })), 42);
    assert.equal(requestedOutputTokens(body({ max_output_tokens: 7 })), 7);
    assert.equal(requestedOutputTokens(body({ inferenceConfig: { maxTokens: 512 } })), 512);
    assert.equal(requestedOutputTokens(body({ generationConfig: { maxOutputTokens: 64 } })), 64);
    assert.equal(requestedOutputTokens(Buffer.from('{"max_tokens" :\n 12}')), 12);
  });

  it('ignores the names inside string values and takes the largest of repeated keys', () => {
    assert.equal(requestedOutputTokens(body({ messages: [{ role: 'user', content: 'set "max_tokens": 99999 please' }] })), undefined);
    assert.equal(requestedOutputTokens(body({ max_tokens: 10, tools: [{ parameters: { max_tokens: 50 } }] })), 50);
    assert.equal(requestedOutputTokens(body({ max_tokens: null })), undefined);
  });
});

describe('worst-case cost of a call', () => {
  it('counts a third of a token per body byte plus the requested output at catalog prices', () => {
    const b = body({ model: 'gpt-4o', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(worstCaseUsd('gpt-4o', b), costUsd('gpt-4o', { input_tokens: Math.ceil(b.length / 3), output_tokens: 100, cached_tokens: 0 }));
  });

  it('falls back to the model\'s own output limit, and never reserves past it', () => {
    const b = body({ model: 'gpt-4o', messages: [] });
    const input = Math.ceil(b.length / 3);
    assert.equal(worstCaseUsd('gpt-4o', b), costUsd('gpt-4o', { input_tokens: input, output_tokens: 16_384, cached_tokens: 0 }));
    const huge = body({ model: 'gpt-4o', max_tokens: 10_000_000 });
    assert.equal(worstCaseUsd('gpt-4o', huge), costUsd('gpt-4o', { input_tokens: Math.ceil(huge.length / 3), output_tokens: 16_384, cached_tokens: 0 }));
  });

  it('is at least the real cost of a realistic reply', () => {
    const b = body({ model: 'claude-sonnet-4-5', max_tokens: 1024, messages: [{ role: 'user', content: 'Summarize the plot of Hamlet in three sentences.' }] });
    // the prompt is ~12 tokens; the reply at most max_tokens
    assert.ok(worstCaseUsd('claude-sonnet-4-5', b) >= costUsd('claude-sonnet-4-5', { input_tokens: 20, output_tokens: 1024, cached_tokens: 0 }));
  });

  it('is 0 for a model the catalog does not price, as accounting is', () => {
    assert.equal(worstCaseUsd('my-finetune', body({ model: 'my-finetune' })), 0);
  });
});
