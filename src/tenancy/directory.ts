import type { DocStore } from '../stores/types.js';
import { hashSecret } from './secrets.js';
import type { DevKey, Org } from './types.js';

interface Indexed {
  key: DevKey;
  /** expires_at parsed once, so the hot path compares numbers */
  expiresAtMs: number;
}

/**
 * Hot-path lookups of orgs and developer keys, answered from memory. Indexes
 * follow the store's change notifications, so a revocation through any
 * replica is obeyed by this one on its next request.
 */
export class Directory {
  private readonly byHash = new Map<string, Indexed>();
  private readonly byDevKeyId = new Map<string, DevKey>();
  /** the version of each key currently in the indexes */
  private readonly indexed = new Map<string, DevKey>();

  constructor(private readonly store: DocStore) {
    for (const k of store.values<DevKey>('dev_keys')) this.index(undefined, k);
    store.onChange((collection, id) => {
      if (collection !== 'dev_keys') return;
      this.index(this.indexed.get(id), store.get<DevKey>('dev_keys', id));
    });
  }

  /** The active key for a presented secret, or undefined (unknown, revoked or expired alike). */
  authenticate(secret: string, now = Date.now()): { key: DevKey; org: Org } | undefined {
    const found = this.byHash.get(hashSecret(secret));
    if (!found || found.key.revoked_at !== null || found.expiresAtMs <= now) return undefined;
    const org = this.org(found.key.org_id);
    return org ? { key: found.key, org } : undefined;
  }

  org(orgId: string): Org | undefined {
    return this.store.get<Org>('orgs', orgId);
  }

  /** by the gateway's key_id or the console's dev_key_id */
  key(id: string): DevKey | undefined {
    return this.store.get<DevKey>('dev_keys', id) ?? this.byDevKeyId.get(id);
  }

  keyBySecretHash(hash: string): DevKey | undefined {
    return this.byHash.get(hash)?.key;
  }

  keysOf(orgId: string): DevKey[] {
    return [...this.store.values<DevKey>('dev_keys')].filter((k) => k.org_id === orgId);
  }

  /** true when `orgId` is `ancestorId` or one of its sub-tenants, at any depth */
  isWithin(orgId: string, ancestorId: string): boolean {
    const seen = new Set<string>();
    let current: string | null = orgId;
    while (current !== null && !seen.has(current)) {
      if (current === ancestorId) return true;
      seen.add(current);
      current = this.org(current)?.parent_org_id ?? null;
    }
    return false;
  }

  private index(old: DevKey | undefined, next: DevKey | undefined): void {
    if (old) {
      // another key may have taken the slot meanwhile (a racing write): leave it
      if (this.byHash.get(old.secret_hash)?.key === old) this.byHash.delete(old.secret_hash);
      if (this.byDevKeyId.get(old.dev_key_id) === old) this.byDevKeyId.delete(old.dev_key_id);
      this.indexed.delete(old.key_id);
    }
    if (next) {
      const expiresAtMs = next.expires_at === null ? Infinity : Date.parse(next.expires_at);
      // an unparseable expiry fails closed
      this.byHash.set(next.secret_hash, { key: next, expiresAtMs: Number.isNaN(expiresAtMs) ? -Infinity : expiresAtMs });
      this.byDevKeyId.set(next.dev_key_id, next);
      this.indexed.set(next.key_id, next);
    }
  }
}
