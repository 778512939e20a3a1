import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { retryAfterMs } from '../../src/upstream/retry-after.js';

const NOW = Date.parse('2030-01-01T00:00:00Z');

describe('a vendor failure\'s retry hint', () => {
  it('reads Retry-After as delta-seconds', () => {
    assert.equal(retryAfterMs([['retry-after', '20']], NOW), 20_000);
    assert.equal(retryAfterMs([['retry-after', ' 0 ']], NOW), 0);
  });

  it('reads Retry-After as an HTTP date, counted from now; a date passed is no hint', () => {
    assert.equal(retryAfterMs([['retry-after', 'Tue, 01 Jan 2030 00:02:00 GMT']], NOW), 120_000);
    assert.equal(retryAfterMs([['retry-after', 'Mon, 31 Dec 2029 23:59:00 GMT']], NOW), undefined);
  });

  it('prefers retry-after-ms (OpenAI, Azure OpenAI), fractions rounded up, wherever it comes', () => {
    assert.equal(retryAfterMs([['retry-after', '2'], ['retry-after-ms', '1500.2']], NOW), 1501);
    assert.equal(retryAfterMs([['retry-after-ms', 'soon'], ['retry-after', '3']], NOW), 3000, 'an unreadable one falls back to Retry-After');
  });

  it('is undefined without a readable hint', () => {
    assert.equal(retryAfterMs([['content-type', 'application/json']], NOW), undefined);
    assert.equal(retryAfterMs([['retry-after', '-5']], NOW), undefined);
    assert.equal(retryAfterMs([['retry-after', 'later']], NOW), undefined);
  });
});
