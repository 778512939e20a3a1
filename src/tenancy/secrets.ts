import { createHash, hash, randomBytes, timingSafeEqual } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

function randomFrom(alphabet: string, length: number): string {
  // rejection sampling keeps every character equally likely
  const limit = 256 - (256 % alphabet.length);
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < limit && out.length < length) out += alphabet[b % alphabet.length];
    }
  }
  return out;
}

export const DEV_KEY_SECRET = /^gw_[0-9A-Za-z]{40}$/;
export const KEY_ID = /^key_[a-z2-7]{20}$/;

export const newDevKeySecret = (): string => `gw_${randomFrom(BASE62, 40)}`;
export const newKeyId = (): string => `key_${randomFrom(BASE32, 20)}`;
/** one-shot sha256 (a third of createHash's cost): hashed on every request, so nothing plaintext need be remembered */
export const hashSecret = (secret: string): string => hash('sha256', secret, 'hex');

/**
 * The key_id of a bootstrapped key given without one: derived from its secret
 * (one-way, domain-separated), so every replica or host applying the same
 * GW_BOOTSTRAP file writes the same id and never a duplicate key.
 */
export function keyIdForSecret(secret: string): string {
  const digest = createHash('sha256').update(`gw-bootstrap-key-id:${secret}`).digest();
  let out = 'key_';
  for (let i = 0; i < 20; i++) out += BASE32[digest[i]! % 32];
  return out;
}

/** Constant-time equality for secrets of any length (compares digests). */
export function secretEquals(a: string, b: string): boolean {
  const da = createHash('sha256').update(a).digest();
  const db = createHash('sha256').update(b).digest();
  return timingSafeEqual(da, db);
}
