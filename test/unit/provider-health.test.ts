import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ProviderHealth } from '../../src/upstream/health.js';

describe('provider health', () => {
  it('marks a provider down after three consecutive failures, for 30 s', () => {
    const clock = { now: 1_000 };
    const h = new ProviderHealth(() => clock.now);
    h.failed('openai');
    h.failed('openai');
    assert.equal(h.reachable('openai'), true, 'two failures are not enough');
    h.failed('openai');
    assert.equal(h.reachable('openai'), false);
    assert.equal(h.reachable('msgvendor'), true, 'others are unaffected');
    clock.now += 30_000;
    assert.equal(h.reachable('openai'), true, 'listed again once the window passes');
  });

  it('one success clears the failures', () => {
    const h = new ProviderHealth(() => 0);
    h.failed('cloudy');
    h.failed('cloudy');
    h.succeeded('cloudy');
    h.failed('cloudy');
    h.failed('cloudy');
    assert.equal(h.reachable('cloudy'), true);
  });
});
