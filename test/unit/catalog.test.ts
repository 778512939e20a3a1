import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CATALOG, costUsd, lookupModel, priciestModel } from '../../src/providers/catalog.js';
import { PROVIDER_IDS } from '../../src/providers/types.js';

describe('model catalog', () => {
  it('entries are unique, priced and owned by a known provider', () => {
    assert.equal(new Set(CATALOG.map((m) => m.id)).size, CATALOG.length);
    for (const m of CATALOG) {
      assert.ok((PROVIDER_IDS as readonly string[]).includes(m.provider), m.id);
      for (const p of Object.values(m.price)) assert.ok(p >= 0 && Number.isFinite(p), m.id);
      assert.ok(m.context_window > 0, m.id);
    }
  });

  it('finds exact ids, dated variants (longest id first), Bedrock region prefixes and models/ paths', () => {
    assert.equal(lookupModel('gpt-4o')?.id, 'gpt-4o');
    assert.equal(lookupModel('gpt-4o-2024-08-06')?.id, 'gpt-4o');
    assert.equal(lookupModel('gpt-4o-mini-2024-07-18')?.id, 'gpt-4o-mini');
    assert.equal(lookupModel('claude-sonnet-4-5-20250929')?.id, 'claude-sonnet-4-5');
    assert.equal(lookupModel('us.anthropic.claude-sonnet-4-5-20250929-v1:0')?.provider, 'cloudy');
    assert.equal(lookupModel('models/gemini-2.5-flash')?.id, 'gemini-2.5-flash');
    assert.equal(lookupModel('arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-5-sonnet-20240620-v1:0')?.id, 'anthropic.claude-3-5-sonnet-20240620-v1:0');
    assert.equal(lookupModel('arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-sonnet-4-20250514-v1:0')?.id, 'anthropic.claude-sonnet-4-20250514-v1:0');
    assert.equal(lookupModel('gemini-2.5-flash-lite')?.id, 'gemini-2.5-flash-lite');
  });

  it('does not guess unknown names or bare prefixes', () => {
    for (const name of [undefined, '', 'gpt', 'gpt-4', 'gpt-4ox', 'mystery-model', 'xgpt-4o']) assert.equal(lookupModel(name), undefined, String(name));
  });

  it('prices usage per million tokens, cached input at its own rate', () => {
    // gpt-4o: input 2.5, cached 1.25, output 10 USD per million
    const cost = costUsd('gpt-4o', { input_tokens: 12, cached_tokens: 2, output_tokens: 5 }, 'openai');
    assert.ok(Math.abs(cost - (10 * 2.5 + 2 * 1.25 + 5 * 10) / 1e6) < 1e-15, String(cost));
    assert.equal(costUsd('gpt-4o-2024-08-06', { input_tokens: 1_000_000, cached_tokens: 0, output_tokens: 0 }, 'openai'), 2.5);
  });

  it('costs nothing without usage, and never goes negative', () => {
    assert.equal(costUsd('gpt-4o', undefined, 'openai'), 0);
    assert.ok(costUsd('gpt-4o', { input_tokens: 1, cached_tokens: 5, output_tokens: 0 }, 'openai') >= 0);
  });

  it('an unknown model (a fine-tune) is settled at its provider\'s priciest known model, never $0', () => {
    const usage = { input_tokens: 1000, cached_tokens: 0, output_tokens: 1000 };
    const fineTune = costUsd('ft:gpt-4o-mini:org:x:id', usage, 'openai');
    const priciest = priciestModel('openai');
    assert.equal(priciest.provider, 'openai');
    assert.ok(fineTune > 0);
    assert.equal(fineTune, costUsd(priciest.id, usage, 'openai'));
    assert.equal(costUsd('prod-deployment', usage, 'cloudx'), fineTune, 'an Azure deployment is priced by the OpenAI models it hosts');
  });

  it('prompt-cache writes are priced at the cache-write price, reads at the cached-input price', () => {
    // claude-sonnet-4-5: input 3, cache write 3.75 (1.25×), cache read 0.3, output 15 USD per million
    const usage = { input_tokens: 1000 + 2000 + 4000, cached_tokens: 2000, cache_write_tokens: 4000, output_tokens: 100 };
    const want = (1000 * 3 + 2000 * 0.3 + 4000 * 3.75 + 100 * 15) / 1e6;
    assert.ok(Math.abs(costUsd('claude-sonnet-4-5', usage, 'msgvendor') - want) < 1e-12);
    assert.ok(Math.abs(costUsd('anthropic.claude-sonnet-4-5-20250929-v1:0', usage, 'cloudy') - want) < 1e-12, 'Bedrock bills Claude cache writes the same way');
    // OpenAI does not bill cache writes apart: a write costs plain input
    const gpt = { input_tokens: 1000, cached_tokens: 0, cache_write_tokens: 1000, output_tokens: 0 };
    assert.equal(costUsd('gpt-4o', gpt, 'openai'), costUsd('gpt-4o', { ...gpt, cache_write_tokens: 0 }, 'openai'));
  });
});
