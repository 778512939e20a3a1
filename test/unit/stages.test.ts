import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fixed2, StageClock } from '../../src/http/stages.js';

const busy = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

describe('StageClock', () => {
  it('renders completed stages with their durations in order', () => {
    const c = new StageClock();
    c.begin('auth');
    busy(2);
    c.end();
    c.begin('upstream_openai');
    c.end();
    const h = c.header();
    assert.match(h, /^auth;dur=\d+\.\d{2}, upstream_openai;dur=\d+\.\d{2}$/);
    assert.ok(Number(/auth;dur=([\d.]+)/.exec(h)?.[1]) >= 2);
  });

  it('beginning a stage closes the running one', () => {
    const c = new StageClock();
    c.begin('auth');
    c.begin('byok_store');
    c.end();
    assert.match(c.header(), /^auth;dur=[\d.]+, byok_store;dur=[\d.]+$/);
  });

  it('names the stage still running (what a deadline answer shows)', () => {
    const c = new StageClock();
    c.begin('auth');
    c.end();
    c.begin('byok_store');
    busy(3);
    const h = c.header();
    assert.match(h, /, byok_store;dur=[\d.]+;running$/);
    assert.ok(Number(/byok_store;dur=([\d.]+)/.exec(h)?.[1]) >= 3);
  });

  it('end without a running stage changes nothing; elapsed counts from the start given', () => {
    const c = new StageClock(performance.now() - 50);
    c.end();
    assert.equal(c.header(), '');
    assert.ok(c.elapsedMs >= 50);
  });

  it('timings() are the header\'s values: each completed stage to the hundredth, the running one flagged', () => {
    const c = new StageClock();
    c.begin('auth');
    busy(1);
    c.begin('policy_rate_limit');
    c.end();
    c.begin('upstream_openai');
    const t = c.timings();
    const shown = c
      .header()
      .split(', ')
      .map((p) => p.split(';'));
    assert.deepEqual(
      t.slice(0, 2),
      shown.slice(0, 2).map(([stage, dur]) => ({ stage, ms: Number(dur?.slice(4)) })),
    );
    assert.equal(t[2]?.stage, 'upstream_openai');
    assert.equal(t[2]?.running, true);
    assert.equal(shown[2]?.[2], 'running');
  });

  it('fixed2 renders two decimals of the hundredths the timings carry', () => {
    for (const ms of [0, 0.004, 1, 10.5, 123.456, 30_000, 100_000.125]) assert.equal(fixed2(ms), ms.toFixed(2), String(ms));
    for (let i = 0; i < 100_000; i++) {
      const ms = i * 0.00137;
      assert.match(fixed2(ms), /^\d+\.\d{2}$/);
      assert.equal(Number(fixed2(ms)), Math.round(ms * 100) / 100);
    }
  });
});
