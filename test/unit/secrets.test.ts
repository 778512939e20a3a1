import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEV_KEY_SECRET, hashSecret, KEY_ID, newDevKeySecret, newKeyId, secretEquals } from '../../src/tenancy/secrets.js';

describe('developer key secrets', () => {
  it('mints gw_ + 40 base62 secrets and key_ + 20 base32 ids, never twice the same', () => {
    const secrets = new Set<string>();
    const ids = new Set<string>();
    for (let i = 0; i < 500; i++) {
      const s = newDevKeySecret();
      const id = newKeyId();
      assert.match(s, DEV_KEY_SECRET);
      assert.match(id, KEY_ID);
      secrets.add(s);
      ids.add(id);
    }
    assert.equal(secrets.size, 500);
    assert.equal(ids.size, 500);
  });

  it('uses the whole alphabet (no bias toward the first characters)', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 500; i++) for (const c of newDevKeySecret().slice(3)) counts.set(c, (counts.get(c) ?? 0) + 1);
    assert.equal(counts.size, 62);
    // 20,000 draws over 62 symbols: about 323 each
    for (const [c, n] of counts) assert.ok(n > 200 && n < 460, `${c}: ${n}`);
  });

  it('stores a sha-256 hash that does not contain the secret', () => {
    const s = newDevKeySecret();
    assert.match(hashSecret(s), /^[0-9a-f]{64}$/);
    assert.equal(hashSecret(s), hashSecret(s));
    assert.notEqual(hashSecret(s), hashSecret(newDevKeySecret()));
    assert.equal(hashSecret(s).includes(s.slice(3, 12)), false);
  });

  it('compares secrets of any length without throwing', () => {
    assert.equal(secretEquals('gw_abc', 'gw_abc'), true);
    assert.equal(secretEquals('gw_abc', 'gw_abd'), false);
    assert.equal(secretEquals('gw_abc', 'gw_abcdef'), false);
    assert.equal(secretEquals('', ''), true);
  });
});
