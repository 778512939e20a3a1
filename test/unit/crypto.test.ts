import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Keyring, keyId } from '../../src/tenancy/crypto.js';

const K1 = Buffer.alloc(32, 1).toString('base64');
const K2 = Buffer.alloc(32, 2).toString('base64');

describe('Keyring (AES-256-GCM for stored provider keys)', () => {
  it('seals and opens; the sealed form names its key and holds no plaintext', () => {
    const ring = Keyring.fromSettings(K1, undefined);
    const sealed = ring.seal('sk-very-secret-value', 'vendor_key:acme:openai');
    assert.equal(sealed.kid, keyId(Buffer.from(K1, 'base64')));
    assert.equal(JSON.stringify(sealed).includes('very-secret'), false);
    assert.equal(ring.open(sealed, 'vendor_key:acme:openai'), 'sk-very-secret-value');
  });

  it('a fresh IV each time: the same secret never seals to the same bytes', () => {
    const ring = Keyring.fromSettings(K1, undefined);
    assert.notEqual(ring.seal('x', 'c').ct + ring.seal('x', 'c').iv, ring.seal('x', 'c').ct + ring.seal('x', 'c').iv);
  });

  it('refuses a record moved to another owner (the context is authenticated)', () => {
    const ring = Keyring.fromSettings(K1, undefined);
    const sealed = ring.seal('secret', 'vendor_key:acme:openai');
    assert.throws(() => ring.open(sealed, 'vendor_key:evil:openai'));
  });

  it('refuses tampered ciphertext or tag', () => {
    const ring = Keyring.fromSettings(K1, undefined);
    const sealed = ring.seal('secret-secret', 'c');
    const flip = (b64: string) => {
      const b = Buffer.from(b64, 'base64');
      b[0] = (b[0] ?? 0) ^ 1;
      return b.toString('base64');
    };
    assert.throws(() => ring.open({ ...sealed, ct: flip(sealed.ct) }, 'c'));
    assert.throws(() => ring.open({ ...sealed, tag: flip(sealed.tag) }, 'c'));
  });

  it('rotation: the new key seals, a previous key still opens, an unknown key id is refused', () => {
    const old = Keyring.fromSettings(K1, undefined).seal('rotate-me', 'c');
    const rotated = Keyring.fromSettings(K2, K1);
    assert.equal(rotated.canOpen(old), true);
    assert.equal(rotated.open(old, 'c'), 'rotate-me');
    assert.equal(rotated.seal('x', 'c').kid, keyId(Buffer.from(K2, 'base64')));
    const without = Keyring.fromSettings(K2, undefined);
    assert.equal(without.canOpen(old), false);
    assert.throws(() => without.open(old, 'c'), /not configured/);
  });

  it('two-phase rotation: a phase-1 ring (old current, new previous) and a phase-2 ring (swapped) open each other’s seals; each seals under its current key', () => {
    const phase1 = Keyring.fromSettings(K1, K2);
    const phase2 = Keyring.fromSettings(K2, K1);
    const fromPhase1 = phase1.seal('written-in-phase-1', 'c');
    const fromPhase2 = phase2.seal('written-in-phase-2', 'c');
    assert.equal(fromPhase1.kid, keyId(Buffer.from(K1, 'base64')));
    assert.equal(fromPhase2.kid, keyId(Buffer.from(K2, 'base64')));
    assert.equal(phase2.open(fromPhase1, 'c'), 'written-in-phase-1');
    assert.equal(phase1.open(fromPhase2, 'c'), 'written-in-phase-2');
  });

  it('without a configured key: an ephemeral per-process key', () => {
    const a = Keyring.fromSettings(undefined, undefined);
    const b = Keyring.fromSettings(undefined, undefined);
    assert.equal(a.ephemeral, true);
    assert.notEqual(a.currentId, b.currentId);
    assert.equal(a.open(a.seal('s', 'c'), 'c'), 's');
  });

  it('a key that is not 32 bytes is refused naming the setting', () => {
    assert.throws(() => Keyring.fromSettings(Buffer.alloc(16).toString('base64'), undefined), /GW_SECRETS_KEY/);
    assert.throws(() => Keyring.fromSettings(K1, Buffer.alloc(8).toString('base64')), /GW_SECRETS_KEY_PREVIOUS/);
  });
});
