import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { lookupModel } from '../../src/providers/catalog.js';
import { openaiReplyUsage } from '../../src/providers/usage/openai.js';
import { foldLedger, trueUpLedger, type FoldLedger } from '../../src/skills/trajectory/ledger.js';
import { trueUpFolds } from '../../src/skills/trajectory/true-up.js';

/**
 * The fold ledger trued up from the reply's cache usage, per provider's cache
 * pricing: OpenAI and Gemini bill a cache write as input, Anthropic and
 * Bedrock Claude at 1.25× input; a cache read is cheaper everywhere.
 */

const price = (m: string) => lookupModel(m)!.price;
const usd = (tokens: number, perMillion: number) => (tokens * perMillion) / 1e6;
const close = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-12, `${a} ≠ ${b}`);

/** a fold of S = 3,000 tokens at P = 200 (system prompt and task), the previous request (or the marked prefix) 8,000 tokens long */
const S = 3000;
const P = 200;
const C = 8000;
const estimateFor = (model: string, marked: boolean): FoldLedger => foldLedger(model, S, { beforeFold: P, marked: marked ? C : undefined, previousRequest: C })!;

describe('the estimate', () => {
  test('is the cached prefix past the fold point lost at (input − cached input)', () => {
    const e = estimateFor('gpt-4o', false);
    const p = price('gpt-4o');
    assert.equal(e.trued_up, false);
    assert.equal(e.cached_tokens_lost, C - P);
    assert.equal(e.usd_saved, usd(S, p.input));
    assert.equal(e.cache_loss_usd, usd(C - P, p.input - p.cached_input));
    assert.equal(e.net_usd, e.usd_saved - e.cache_loss_usd);
    assert.deepEqual([e.fold_point_tokens, e.cached_prefix_tokens, e.cache], [P, C, 'automatic']);
  });
});

describe('OpenAI (gpt-4o): cache reads at half price, no cache-write premium', () => {
  const p = price('gpt-4o');
  const e = estimateFor('gpt-4o', false);

  test('the cache held the folded conversation (an earlier request folded alike): only the folded tokens lose their discount', () => {
    const t = trueUpLedger(e, { input: 5500, read: 5000, written: 0 }, 'folded', 'gpt-4o', p);
    assert.equal(t.trued_up, true);
    // unfolded: the same read plus the S folded tokens
    assert.equal(t.cached_tokens_lost, S);
    close(t.cache_loss_usd, usd(S, p.input - p.cached_input));
    // folding saved the folded tokens at their cached price
    close(t.net_usd, usd(S, p.cached_input));
    assert.ok(t.net_usd > 0 && e.net_usd < 0, 'the estimate said folding lost money; the reply says it saved');
    assert.deepEqual(t.estimate, { cached_tokens_lost: e.cached_tokens_lost, cache_loss_usd: e.cache_loss_usd, net_usd: e.net_usd });
    assert.deepEqual(t.reply, { input: 5500, read: 5000, written: 0 });
  });

  test('the read stopped at the fold point (the first fold): the unfolded request would have read the previous prompt', () => {
    const t = trueUpLedger(e, { input: 5500, read: 128, written: 0 }, 'folded', 'gpt-4o', p);
    assert.equal(t.cached_tokens_lost, C - 128);
    close(t.net_usd, usd(S, p.input) - usd(C - 128, p.input - p.cached_input));
  });

  test('a cold cache (no read though the part before the fold was long enough to cache): nothing lost', () => {
    const long = foldLedger('gpt-4o', S, { beforeFold: 1500, marked: undefined, previousRequest: C })!;
    const t = trueUpLedger(long, { input: 4700, read: 0, written: 0 }, 'folded', 'gpt-4o', p);
    assert.equal(t.cached_tokens_lost, 0);
    assert.equal(t.net_usd, usd(S, p.input));
    assert.ok(long.net_usd < t.net_usd);
  });

  test('in shadow the reply is the unfolded request: the folded one would have read up to the fold point', () => {
    const t = trueUpLedger(e, { input: 8500, read: 5000, written: 0 }, 'unfolded', 'gpt-4o', p);
    assert.equal(t.cached_tokens_lost, 5000 - P);
    close(t.net_usd, usd(S, p.input) - usd(5000 - P, p.input - p.cached_input));
  });

  test('in shadow with a cold cache: nothing lost', () => {
    const t = trueUpLedger(e, { input: 8500, read: 0, written: 0 }, 'unfolded', 'gpt-4o', p);
    assert.equal(t.net_usd, usd(S, p.input));
  });
});

describe('Anthropic (claude-sonnet-4-5): cache reads at 0.1×, cache writes at 1.25× input', () => {
  const p = price('claude-sonnet-4-5');
  const e = estimateFor('claude-sonnet-4-5', true);

  test('the first fold writes the folded prefix anew: the lost reads and the extra write premium both count', () => {
    const t = trueUpLedger(e, { input: 5500, read: 0, written: 5000 }, 'folded', 'claude-sonnet-4-5', p);
    // unfolded: reads the marked prefix C, writes nothing
    assert.equal(t.cached_tokens_lost, C);
    assert.equal(t.cache_write_tokens_added, 5000);
    close(t.cache_loss_usd, usd(C, p.input - p.cached_input) + usd(5000, p.cache_write - p.input));
    close(t.net_usd, usd(S, p.input) - t.cache_loss_usd);
    assert.ok(t.net_usd < e.net_usd, 'the write premium makes the first fold dearer than the estimate said');
  });

  test('the cache held the folded prefix: only the folded tokens lose their discount, the same tail is written either way', () => {
    const t = trueUpLedger(e, { input: 5900, read: 5000, written: 400 }, 'folded', 'claude-sonnet-4-5', p);
    assert.equal(t.cached_tokens_lost, S);
    assert.equal(t.cache_write_tokens_added, 0);
    close(t.net_usd, usd(S, p.cached_input));
  });

  test('a marker before the fold point: the fold changes no cache read or write', () => {
    const early = foldLedger('claude-sonnet-4-5', S, { beforeFold: P, marked: 150, previousRequest: C })!;
    const t = trueUpLedger(early, { input: 5500, read: 150, written: 0 }, 'folded', 'claude-sonnet-4-5', p);
    assert.equal(t.cached_tokens_lost, 0);
    assert.equal(t.cache_write_tokens_added, 0);
    assert.equal(t.net_usd, usd(S, p.input));
  });
});

describe('Bedrock Converse (Claude Sonnet 4.5): priced as Anthropic', () => {
  const model = 'anthropic.claude-sonnet-4-5-20250929-v1:0';
  const p = price(model);

  test('in shadow, a request that read its marked prefix: the folded one would have read up to the fold point and written the rest', () => {
    const e = estimateFor(model, true);
    const t = trueUpLedger(e, { input: 8500, read: 5800, written: 200 }, 'unfolded', model, p);
    // folded: reads P, writes 5,800 + 200 − 3,000 − 200 = 2,800
    assert.equal(t.cached_tokens_lost, 5800 - P);
    assert.equal(t.cache_write_tokens_added, 2800 - 200);
    close(t.net_usd, usd(S, p.input) - usd(5800 - P, p.input - p.cached_input) - usd(2600, p.cache_write - p.input));
  });
});

describe('Gemini (gemini-2.5-pro): cache reads cheaper, writes billed as input', () => {
  const p = price('gemini-2.5-pro');

  test('the cache held the folded conversation: only the folded tokens lose their discount', () => {
    const e = estimateFor('gemini-2.5-pro', false);
    const t = trueUpLedger(e, { input: 5500, read: 5000, written: 0 }, 'folded', 'gemini-2.5-pro', p);
    assert.equal(t.cached_tokens_lost, S);
    close(t.net_usd, usd(S, p.cached_input));
  });
});

describe('trueUpFolds: the reports as accounting and the /v1/execute trace keep them', () => {
  const estimate = estimateFor('gpt-4o', false);
  const detail = { tokens_saved: S, usd_saved: estimate.usd_saved, ledger_usd: estimate.net_usd, estimated_ledger_usd: estimate.net_usd, ledger_trued_up: false, ledger: estimate };
  const reports = [
    { skill: 'pii_redaction', outcome: 'skipped' },
    { skill: 'agent_trajectory_compaction', outcome: 'applied', detail },
  ];
  const usage = { input_tokens: 5500, output_tokens: 9, cached_tokens: 5000 };

  test('a fold that acted: the ledger and its sums are trued up, the estimate kept', () => {
    const out = trueUpFolds(reports, { usage, model: 'gpt-4o', provider: 'openai' });
    assert.notEqual(out, reports);
    assert.equal(out[0], reports[0]);
    const d = out[1]!.detail!;
    const l = d['ledger'] as FoldLedger;
    assert.equal(l.trued_up, true);
    assert.equal(d['ledger_trued_up'], true);
    assert.equal(d['ledger_usd'], l.net_usd);
    assert.equal(d['estimated_ledger_usd'], estimate.net_usd);
    close(l.net_usd, usd(S, price('gpt-4o').cached_input));
    assert.equal(reports[1]!.detail, detail, 'the engine\'s report is not changed in place');
  });

  test('priced at the served model (a dated variant, a fallback)', () => {
    const out = trueUpFolds(reports, { usage, model: 'gpt-4o-mini-2024-07-18', provider: 'openai' });
    const l = out[1]!.detail!['ledger'] as FoldLedger;
    assert.equal(l.model, 'gpt-4o-mini');
    close(l.usd_saved, usd(S, price('gpt-4o-mini').input));
  });

  test('a shadow decision to fold is trued up from the unfolded request\'s reply', () => {
    const shadow = [{ skill: 'agent_trajectory_compaction', outcome: 'shadow', detail: { decision: 'applied', ...detail } }];
    const out = trueUpFolds(shadow, { usage: { input_tokens: 8500, output_tokens: 9, cached_tokens: 0 }, model: 'gpt-4o', provider: 'openai' });
    assert.equal(out[0]!.detail!['ledger_usd'], usd(S, price('gpt-4o').input));
  });

  test('the estimate stands where the reply does not tell: no usage, no cache figure, a self-hosted server, no fold', () => {
    assert.equal(trueUpFolds(reports, { usage: undefined, model: 'gpt-4o', provider: 'openai' }), reports);
    assert.equal(trueUpFolds(reports, { usage: { ...usage, cache_unreported: true }, model: 'gpt-4o', provider: 'openai' }), reports);
    assert.equal(trueUpFolds(reports, { usage, model: 'gpt-4o', provider: 'selfhosted' }), reports);
    const skipped = [{ skill: 'agent_trajectory_compaction', outcome: 'skipped', detail: { reason: 'no tool calls', tokens_saved: 0 } }];
    assert.equal(trueUpFolds(skipped, { usage, model: 'gpt-4o', provider: 'openai' }), skipped);
    const unpriced = [{ skill: 'agent_trajectory_compaction', outcome: 'applied', detail: { ledger: { tokens_saved: S, priced: false } } }];
    assert.equal(trueUpFolds(unpriced, { usage, model: 'gpt-4o', provider: 'openai' }), unpriced);
  });

  test('an OpenAI-compatible reply without prompt_tokens_details says nothing of its cache', () => {
    assert.equal(openaiReplyUsage({ usage: { prompt_tokens: 10, completion_tokens: 2 } })?.cache_unreported, true);
    assert.equal(openaiReplyUsage({ usage: { prompt_tokens: 10, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 0 } } })?.cache_unreported, undefined);
  });
});
