import { BAND_DEPTH, entryBytes, type CacheCandidate, type CacheEntry, type CacheStore, type CachedReply } from '../cache.js';

interface Held {
  entry: CacheEntry;
  bytes: number;
  expiresAt: number;
}

export interface EmbeddedCacheOptions {
  maxEntries: number;
  maxBytes: number;
  ttlMs: number;
  clock?: () => number;
}

/**
 * The cache in process (one replica): a least-recently-used map bounded by
 * entry count and bytes, entries expiring after the TTL, and the LSH band
 * index kept in step (an evicted entry leaves its bands).
 */
export class EmbeddedCacheStore implements CacheStore {
  /** org NUL id → entry, in least-recently-used order (a Map keeps insertion order) */
  private readonly entries = new Map<string, Held>();
  /** org NUL band → ids, newest first */
  private readonly bands = new Map<string, string[]>();
  private bytes = 0;
  private readonly clock: () => number;

  constructor(private readonly opts: EmbeddedCacheOptions) {
    this.clock = opts.clock ?? Date.now;
  }

  async start(): Promise<void> {}

  async close(): Promise<void> {}

  /** entries and bytes held now */
  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }

  private live(key: string): Held | undefined {
    const held = this.entries.get(key);
    if (held === undefined) return undefined;
    if (held.expiresAt <= this.clock()) {
      this.drop(key, held);
      return undefined;
    }
    return held;
  }

  async get(org: string, id: string): Promise<CachedReply | undefined> {
    const key = `${org}\0${id}`;
    const held = this.live(key);
    if (held === undefined) return undefined;
    // most recently used goes to the end
    this.entries.delete(key);
    this.entries.set(key, held);
    return held.entry.reply;
  }

  async candidates(org: string, bands: readonly string[], limit: number): Promise<CacheCandidate[]> {
    const out: CacheCandidate[] = [];
    const seen = new Set<string>();
    for (const band of bands) {
      for (const id of this.bands.get(`${org}\0${band}`) ?? []) {
        if (out.length >= limit) return out;
        if (seen.has(id)) continue;
        seen.add(id);
        const near = this.live(`${org}\0${id}`)?.entry.near;
        if (near !== undefined) out.push({ id, signature: near.signature });
      }
    }
    return out;
  }

  async put(org: string, id: string, entry: CacheEntry): Promise<void> {
    const bytes = entryBytes(entry.reply);
    if (bytes > this.opts.maxBytes) return;
    const key = `${org}\0${id}`;
    const old = this.entries.get(key);
    if (old !== undefined) this.drop(key, old);
    this.entries.set(key, { entry, bytes, expiresAt: this.clock() + this.opts.ttlMs });
    this.bytes += bytes;
    for (const band of entry.near?.bands ?? []) {
      const bandKey = `${org}\0${band}`;
      const ids = [id, ...(this.bands.get(bandKey) ?? [])];
      // ids pushed out of a full band stay findable by exact key and other bands
      this.bands.set(bandKey, ids.slice(0, BAND_DEPTH));
    }
    for (const [k, held] of this.entries) {
      if (this.entries.size <= this.opts.maxEntries && this.bytes <= this.opts.maxBytes) break;
      this.drop(k, held);
    }
  }

  private drop(key: string, held: Held): void {
    this.entries.delete(key);
    this.bytes -= held.bytes;
    const [org, id] = key.split('\0') as [string, string];
    for (const band of held.entry.near?.bands ?? []) {
      const bandKey = `${org}\0${band}`;
      const ids = this.bands.get(bandKey)?.filter((x) => x !== id);
      if (ids === undefined || ids.length === 0) this.bands.delete(bandKey);
      else this.bands.set(bandKey, ids);
    }
  }
}
