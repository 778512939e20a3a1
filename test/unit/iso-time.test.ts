import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isoTime } from '../../src/telemetry/iso-time.js';

test('isoTime formats as Date#toISOString, across seconds and at every millisecond width', () => {
  const base = Date.UTC(2026, 10, 25, 3, 59, 59);
  for (const ms of [0, 5, 42, 999, 1000, 1001, 1010, 1100, 60_000 + 7]) {
    const t = base + ms;
    assert.equal(isoTime(t), new Date(t).toISOString());
  }
  // back to an earlier second: the cached head is replaced, never reused
  assert.equal(isoTime(base), new Date(base).toISOString());
  assert.equal(isoTime(0), '1970-01-01T00:00:00.000Z');
});

test('isoTime drops a fraction of a millisecond, as Date does', () => {
  const t = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
  assert.equal(isoTime(t + 0.9), new Date(t + 0.9).toISOString());
});
