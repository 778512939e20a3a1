import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StageClock } from '../../src/http/stages.js';

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
});
