import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RetryDetector, bodyDigest } from '../../src/telemetry/retry.js';
import { rollupReads, type RollupRead } from '../../src/telemetry/rollup-plan.js';
import type { RequestRow } from '../../src/telemetry/row.js';
import { bucketStart, DIMENSION_NAMES, dimensionTuple, TUPLE_SEP, UsageAggregator } from '../../src/telemetry/usage.js';
import { usageRow } from '../helpers/usage-rows.js';

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
    const tuple = (provider: string, team = 'quant') => ['chat_completions', provider, 'json', 'gpt-4o', team, ...new Array<string>(14).fill('')].join('\x1f');
    const agg = new UsageAggregator({ groupBy: ['provider'], bucket: 'day', filters: { team: 'quant' } });
    agg.add(tuple('openai'), at('2026-03-05T01:00:00Z'), '2 1500000000 10 20 0');
    agg.add(tuple('openai'), at('2026-03-05T02:00:00Z'), '1 500000000 5 5 1');
    agg.add(tuple('openai', 'ops'), at('2026-03-05T02:00:00Z'), '7 7 7 7 7');
    agg.add(tuple('msgvendor'), at('2026-03-06T02:00:00Z'), '1 1000000000 1 1 0');
    assert.deepEqual(agg.rows(10), [
      { bucket_start: '2026-03-05T00:00:00.000Z', provider: 'openai', requests: 3, cost_usd: 2, tokens_in: 15, tokens_out: 25, cache_hits: 1 },
      { bucket_start: '2026-03-06T00:00:00.000Z', provider: 'msgvendor', requests: 1, cost_usd: 1, tokens_in: 1, tokens_out: 1, cache_hits: 0 },
    ]);
  });
});

describe('a usage read sums the fewest rollups that cover its window', () => {
  const reads = (now: string, windowMs: number, bucket?: 'hour' | 'day' | 'week') => rollupReads(at(now), windowMs, bucket);
  const span = (rs: RollupRead[], period: RollupRead['period']) => {
    const ns = rs.filter((r) => r.period === period).map((r) => r.n);
    return ns.length === 0 ? undefined : [ns[0], ns.length];
  };
  const HOUR = 3_600_000;
  const DAY = 24 * HOUR;

  it('a window up to an hour reads its minutes, the first one whole', () => {
    const rs = reads('2026-03-05T17:42:10.000Z', 15 * 60_000);
    assert.deepEqual(span(rs, 'minute'), [at('2026-03-05T17:27:00Z') / 60_000, 16]);
    assert.equal(rs.length, 16);
    assert.equal(reads('2026-03-05T17:42:10.000Z', HOUR).length, 61);
  });

  it('7 days read the hours of the first part-day, then whole days up to today', () => {
    const rs = reads('2026-03-05T17:42:10.000Z', 7 * DAY);
    // from 2026-02-26T17:00 to the end of that day: 7 hours; then Feb 27 to Mar 5: 7 days
    assert.deepEqual(span(rs, 'hour'), [at('2026-02-26T17:00:00Z') / HOUR, 7]);
    assert.deepEqual(span(rs, 'day'), [at('2026-02-27T00:00:00Z') / DAY, 7]);
    assert.equal(rs.length, 14);
    assert.ok(rs.length < 7 * 24, 'fewer reads than the window\'s hours');
  });

  it('a window starting on a UTC day reads whole days only; the hour bucket reads hours', () => {
    assert.deepEqual(reads('2026-03-05T00:10:00.000Z', DAY), [
      { period: 'day', n: at('2026-03-04T00:00:00Z') / DAY },
      { period: 'day', n: at('2026-03-05T00:00:00Z') / DAY },
    ]);
    const hourly = reads('2026-03-05T17:42:10.000Z', 7 * DAY, 'hour');
    assert.deepEqual(span(hourly, 'hour'), [at('2026-02-26T17:00:00Z') / HOUR, 7 * 24 + 1]);
    assert.equal(hourly.length, 7 * 24 + 1);
  });

  it('every hour of the window is covered exactly once', () => {
    for (const now of ['2026-03-05T17:42:10.000Z', '2026-03-05T00:00:00.000Z', '2026-03-05T23:59:59.999Z']) {
      for (const windowMs of [DAY, 7 * DAY, 30 * DAY]) {
        const hours = reads(now, windowMs).flatMap((r) => (r.period === 'hour' ? [r.n] : Array.from({ length: 24 }, (_, i) => r.n * 24 + i)));
        const first = Math.floor((at(now) - windowMs) / HOUR);
        const today = Math.floor(at(now) / DAY);
        const expected = Array.from({ length: (today + 1) * 24 - first }, (_, i) => first + i);
        assert.deepEqual(hours, expected, `${now} ${windowMs}`);
      }
    }
  });
});

describe('retry detection', () => {
  let requests = 0;
  /** a new request id for each call */
  const REQ = () => `req_${++requests}`;

  it('is a retry when the same key sends the same body within 60 s, or the SDK says so', () => {
    const d = new RetryDetector();
    const body = bodyDigest(Buffer.from('{"model":"gpt-4o"}'));
    assert.equal(d.isRetry('k1', REQ(), {}, body, 1_000), false);
    assert.equal(d.isRetry('k2', REQ(), {}, body, 2_000), false, 'another key');
    assert.equal(d.isRetry('k1', REQ(), {}, body, 30_000), true);
    assert.equal(d.isRetry('k1', REQ(), {}, bodyDigest(Buffer.from('{"model":"gpt-4p"}')), 31_000), false, 'a body of the same length one byte apart');
    assert.equal(d.isRetry('k1', REQ(), {}, body, 95_000), false, 'more than 60 s after the last one');
    assert.equal(d.isRetry('k1', REQ(), { 'x-stainless-retry-count': '2' }, bodyDigest(Buffer.from('other')), 96_000), true);
    assert.equal(d.isRetry('k1', REQ(), { 'x-stainless-retry-count': '0' }, undefined, 97_000), false);
  });

  it('is not a retry when the same request sends its body again (a fallback attempt)', () => {
    const d = new RetryDetector();
    const body = bodyDigest(Buffer.from('{"model":"error_500"}'));
    assert.equal(d.isRetry('k1', 'req_a', {}, body, 1_000), false);
    assert.equal(d.isRetry('k1', 'req_a', {}, body, 1_200), false, 'the second attempt of req_a');
    assert.equal(d.isRetry('k1', 'req_b', {}, body, 1_400), true, 'another request with the same body');
  });
});

describe('a rollup field', () => {
  it('keeps one value per dimension whatever control characters a caller\'s label or model carries', () => {
    const row: RequestRow = { ...usageRow(1, Date.parse('2030-01-01T00:00:00Z')), team: `a${TUPLE_SEP}b`, model: 'gpt\x1e4o', use_case: 'x\ty' };
    const values = dimensionTuple(row).split(TUPLE_SEP);
    assert.equal(values.length, DIMENSION_NAMES.length);
    assert.equal(values[DIMENSION_NAMES.indexOf('team')], 'a?b');
    assert.equal(values[DIMENSION_NAMES.indexOf('model')], 'gpt?4o');
    assert.equal(values[DIMENSION_NAMES.indexOf('feature')], 'x?y');
  });
});
