import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { costUsd } from '../../src/providers/catalog.js';
import { encode } from 'gpt-tokenizer';
import { periodOf } from '../../src/stores/meter.js';
import { worstCaseUsd } from '../../src/tenancy/spend-cap.js';

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

describe('worst-case cost of a call: an upper bound of what it can cost', () => {
  const at = (model: string, input: number, output: number) => costUsd(model, { input_tokens: input, output_tokens: output, cached_tokens: 0 }, 'openai');

  it('counts every body byte as a prompt token, plus the requested output', () => {
    const b = body({ model: 'gpt-4o', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(worstCaseUsd('gpt-4o', b, 'openai'), at('gpt-4o', b.length, 100));
  });

  it('bounds dense text from above: base64 and CJK never have more tokens than bytes', () => {
    for (const text of [Buffer.from(Array.from({ length: 3000 }, (_, i) => i % 251)).toString('base64'), '데이터 보존 규칙은 '.repeat(300), '🙂'.repeat(500)]) {
      const b = body({ model: 'gpt-4o', max_tokens: 1, messages: [{ role: 'user', content: text }] });
      const real = encode(text).length;
      assert.ok(b.length >= real, `${b.length} bytes < ${real} tokens`);
      assert.ok(worstCaseUsd('gpt-4o', b, 'openai') >= at('gpt-4o', real, 1));
    }
  });

  it('never reserves past the context window or the model\'s own output limit', () => {
    const huge = Buffer.from(JSON.stringify({ model: 'gpt-4o', max_tokens: 10_000_000, messages: [{ role: 'user', content: 'x'.repeat(1_000_000) }] }));
    assert.equal(worstCaseUsd('gpt-4o', huge, 'openai'), at('gpt-4o', 128_000, 16_384));
  });

  it('reads the output limit where each surface sets it, not from nested tool schemas or strings', () => {
    const model = 'gemini-2.5-pro';
    // a limit inside a tool's schema or a message is not the call's limit: the model's own applies
    const nested = body({ contents: [{ parts: [{ text: '"maxOutputTokens": 1' }] }], tools: [{ functionDeclarations: [{ parameters: { maxOutputTokens: 1 } }] }] });
    assert.equal(worstCaseUsd(model, nested, 'genvendor'), at(model, nested.length, 65_536));
    const b1 = body({ contents: [], generationConfig: { maxOutputTokens: 64 } });
    assert.equal(worstCaseUsd(model, b1, 'genvendor'), at(model, b1.length, 64));
    const b2 = body({ messages: [], inferenceConfig: { maxTokens: 512 } });
    assert.equal(worstCaseUsd('amazon.nova-pro-v1:0', b2, 'cloudy'), at('amazon.nova-pro-v1:0', b2.length, 512));
    const b3 = body({ model: 'gpt-4o', max_completion_tokens: 42 });
    assert.equal(worstCaseUsd('gpt-4o', b3, 'openai'), at('gpt-4o', b3.length, 42));
  });

  it('multiplies the output by the choices asked for (n, candidateCount)', () => {
    const b = body({ model: 'gpt-4o', max_tokens: 100, n: 8 });
    assert.equal(worstCaseUsd('gpt-4o', b, 'openai'), at('gpt-4o', b.length, 800));
    const g = body({ contents: [], generationConfig: { maxOutputTokens: 10, candidateCount: 3 } });
    assert.equal(worstCaseUsd('gemini-2.5-flash', g, 'genvendor'), at('gemini-2.5-flash', g.length, 30));
  });

  it('prices a model the catalog does not know (an Azure deployment) as its provider\'s priciest', () => {
    const b = body({ messages: [] });
    const deployment = worstCaseUsd('prod-chat', b, 'cloudx');
    assert.ok(deployment > 0);
    assert.ok(deployment >= worstCaseUsd('gpt-4o', b, 'openai'));
  });

  it('prices the prompt as a cache write where that costs more (Anthropic), so a settled call never exceeds its reservation', () => {
    const b = body({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [] });
    const allWritten = costUsd('claude-sonnet-4-5', { input_tokens: b.length, cached_tokens: 0, cache_write_tokens: b.length, output_tokens: 10 }, 'msgvendor');
    assert.equal(worstCaseUsd('claude-sonnet-4-5', b, 'msgvendor'), allWritten);
    assert.ok(allWritten > at('claude-sonnet-4-5', b.length, 10));
  });

  it('a body that is not JSON still reserves the model\'s whole output', () => {
    const b = Buffer.from('not json');
    assert.equal(worstCaseUsd('gpt-4o', b, 'openai'), at('gpt-4o', b.length, 16_384));
  });
});
