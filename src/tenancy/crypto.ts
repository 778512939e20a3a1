import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** A secret sealed with AES-256-GCM; every part base64. */
export interface Sealed {
  /** id of the key that sealed it (a fingerprint, not the key) */
  kid: string;
  iv: string;
  tag: string;
  ct: string;
}

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;

/** A short public fingerprint of a key, so a record names the key that can open it. */
export const keyId = (key: Buffer): string => createHash('sha256').update('gw-secrets-key-id:').update(key).digest('hex').slice(0, 16);

function decodeKey(base64: string, what: string): Buffer {
  const key = Buffer.from(base64, 'base64');
  if (key.length !== 32) throw new Error(`${what}: must be 32 bytes, base64`);
  return key;
}

/**
 * The keys that seal stored provider keys: the current one (GW_SECRETS_KEY)
 * seals, the current and any previous ones (GW_SECRETS_KEY_PREVIOUS) open.
 * Which key is listed where is all the rotation needs: phase 1 lists the new
 * key as previous, phase 2 swaps the two, phase 3 drops the old one
 * (docs/operations.md, Rotating GW_SECRETS_KEY).
 */
export class Keyring {
  readonly currentId: string;
  private readonly keys = new Map<string, Buffer>();

  private constructor(
    current: Buffer,
    previous: readonly Buffer[],
    /** true when no key was configured: a random per-process key, so nothing sealed survives a restart */
    readonly ephemeral: boolean,
  ) {
    this.currentId = keyId(current);
    this.keys.set(this.currentId, current);
    for (const k of previous) this.keys.set(keyId(k), k);
  }

  /** From GW_SECRETS_KEY and GW_SECRETS_KEY_PREVIOUS (comma-separated); without a key, an ephemeral one. */
  static fromSettings(current: string | undefined, previous: string | undefined): Keyring {
    const old = (previous ?? '').split(',').filter(Boolean).map((k) => decodeKey(k, 'GW_SECRETS_KEY_PREVIOUS'));
    if (current === undefined) return new Keyring(randomBytes(32), old, true);
    return new Keyring(decodeKey(current, 'GW_SECRETS_KEY'), old, false);
  }

  /** Seals `plaintext`; `context` is bound as additional data, so a record cannot be moved to another owner. */
  seal(plaintext: string, context: string): Sealed {
    const key = this.keys.get(this.currentId) as Buffer;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, key, iv);
    cipher.setAAD(Buffer.from(context));
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return { kid: this.currentId, iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), ct: ct.toString('base64') };
  }

  /** Opens a sealed secret; throws when its key is not configured or it was tampered with. */
  open(sealed: Sealed, context: string): string {
    const key = this.keys.get(sealed.kid);
    if (!key) throw new Error(`sealed under key ${sealed.kid}, which is not configured`);
    const decipher = createDecipheriv(ALGORITHM, key, Buffer.from(sealed.iv, 'base64'));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(sealed.ct, 'base64')), decipher.final()]).toString('utf8');
  }

  canOpen(sealed: Sealed): boolean {
    return this.keys.has(sealed.kid);
  }
}
