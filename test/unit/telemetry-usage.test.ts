import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RetryDetector, bodyDigest } from '../../src/telemetry/retry.js';
import { bucketStart, parseCounters, UsageAggregator } from '../../src/telemetry/usage.js';

const at = (iso: string) => Date.parse(iso);

describe('usage buckets are UTC hours, days and weeks starting on Monday', () => {
  it('puts a time in the bucket that holds it', () => {
    const t = at('2026-03-05T17:42:10.000Z'); // a Thursday
    assert.equal(new Date(bucketStart(t, 'hour')).toISOString(), '2026-03-05T17:00:00.000Z');
    assert.equal(new Date(bucketStart(t, 'day')).toISOString(), '2026-03-05T00:00:00.000Z');
    assert.equal(new Date(bucketStart(t, 'week')).toISOString(), '2026-03-02T00:00:00.000Z');
    assert.equal(new Date(bucketStart(at('2026-03-02T00:00:00.000Z'), 'week')).toISOString(), '2026-03-02T00:00:00.000Z');
    assert.equal(new Date(bucketStart(at('2026-03-08T23:59:59.999Z'), 'week')).toISOString(), '2026-03-02T00:00:00.000Z');
  });

  it('sums hourly cells into days, filtered and grouped by dimension', () => {
    // tuple positions follow DIMENSION_NAMES: endpoint, provider, …
    const values = (provider: string) => ['chat_completions', provider, 'json', 'gpt-4o', 'quant', ...new Array<string>(14).fill('')];
    const agg = new UsageAggregator({ groupBy: ['provider'], bucket: 'day', filters: { team: 'quant' } });
    agg.add(values('openai'), at('2026-03-05T01:00:00Z'), parseCounters('2 1500000000 10 20 0'));
    agg.add(values('openai'), at('2026-03-05T02:00:00Z'), parseCounters('1 500000000 5 5 1'));
    agg.add(values('msgvendor'), at('2026-03-06T02:00:00Z'), parseCounters('1 1000000000 1 1 0'));
    assert.deepEqual(agg.rows(10), [
      { bucket_start: '2026-03-05T00:00:00.000Z', provider: 'openai', requests: 3, cost_usd: 2, tokens_in: 15, tokens_out: 25, cache_hits: 1 },
      { bucket_start: '2026-03-06T00:00:00.000Z', provider: 'msgvendor', requests: 1, cost_usd: 1, tokens_in: 1, tokens_out: 1, cache_hits: 0 },
    ]);
  });
});

describe('retry detection', () => {
  it('is a retry when the same key sends the same body within 60 s, or the SDK says so', () => {
    const d = new RetryDetector();
    const body = bodyDigest(Buffer.from('{"model":"gpt-4o"}'));
    assert.equal(d.isRetry('k1', {}, body, 1_000), false);
    assert.equal(d.isRetry('k2', {}, body, 2_000), false, 'another key');
    assert.equal(d.isRetry('k1', {}, body, 30_000), true);
    assert.equal(d.isRetry('k1', {}, body, 95_000), false, 'more than 60 s after the last one');
    assert.equal(d.isRetry('k1', { 'x-stainless-retry-count': '2' }, bodyDigest(Buffer.from('other')), 96_000), true);
    assert.equal(d.isRetry('k1', { 'x-stainless-retry-count': '0' }, undefined, 97_000), false);
  });
});
