import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OriginHealth } from '../../src/upstream/health.js';

describe('upstream origin health', () => {
  it('marks an origin down after three consecutive failures, for 30 s', () => {
    const clock = { now: 1_000 };
    const h = new OriginHealth(() => clock.now);
    h.failed('https://api.openai.com');
    h.failed('https://api.openai.com');
    assert.equal(h.reachable('https://api.openai.com'), true, 'two failures are not enough');
    h.failed('https://api.openai.com');
    assert.equal(h.reachable('https://api.openai.com'), false);
    assert.equal(h.reachable('https://api.anthropic.com'), true, 'others are unaffected');
    clock.now += 30_000;
    assert.equal(h.reachable('https://api.openai.com'), true, 'listed again once the window passes');
  });

  it('one success clears the failures', () => {
    const h = new OriginHealth(() => 0);
    h.failed('https://bedrock-runtime.us-east-1.amazonaws.com');
    h.failed('https://bedrock-runtime.us-east-1.amazonaws.com');
    h.succeeded('https://bedrock-runtime.us-east-1.amazonaws.com');
    h.failed('https://bedrock-runtime.us-east-1.amazonaws.com');
    h.failed('https://bedrock-runtime.us-east-1.amazonaws.com');
    assert.equal(h.reachable('https://bedrock-runtime.us-east-1.amazonaws.com'), true);
  });
});
