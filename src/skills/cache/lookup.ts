import { digest, similarity } from './signature.js';
import { replyText } from './reply.js';
import type { StageCacheKeys } from '../stage.js';
import { entryBytes, type CacheStore, type CachedReply, type StoredSignature } from '../../stores/cache.js';

/**
 * The semantic cache on the main thread: decides hit or miss from the keys
 * the worker computed (StageCacheKeys) and the store, and records replies.
 * Its work per request is fixed whatever the prompt's size: a few hashes of
 * short strings, store round trips, and comparisons of fixed-size signatures.
 * A store that fails or is slower than `boundMs` is a lookup `error`: the
 * request is relayed (fail-open), never failed.
 */

/** What the request targets outside its body (several surfaces carry the model or the stream flag in the path). */
export interface CacheRoute {
  provider: string;
  model: string;
  stream: boolean;
}

export interface CacheSettings {
  /** GW_CACHE_SIMILARITY */
  similarity: number;
  /** GW_CACHE_MAX_BYTES: a reply larger than a sixteenth of it is not stored */
  maxBytes: number;
  /** a store call slower than this counts as an outage */
  boundMs?: number;
}

/** Where the cache reports lookups and shadow comparisons (telemetry/metrics.ts implements it). */
export interface CacheObserver {
  lookedUp(result: 'hit' | 'miss' | 'error'): void;
  /** shadow mode: a would-be hit's stored reply compared with the live one (matched false = a false hit) */
  shadowCompared(matched: boolean): void;
}

/** Where a reply to this request is stored: opaque to the caller. */
export interface RecordKey {
  readonly org: string;
  readonly id: string;
  readonly near?: { signature: StoredSignature; bands: readonly string[] };
}

export type CacheLookup =
  | { kind: 'hit'; reply: CachedReply; match: 'exact' | 'near'; similarity: number }
  /** `similarity`: the closest near-duplicate candidate's, when one was compared */
  | { kind: 'miss'; recordKey: RecordKey; similarity?: number }
  | { kind: 'error'; reason: string };

/** Near-duplicate candidates compared per lookup, at most. */
const MAX_CANDIDATES = 32;
const DEFAULT_BOUND_MS = 250;

class Slow extends Error {}

function within<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Slow(`the cache store did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

const reasonOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

export class SemanticCache {
  private readonly boundMs: number;

  constructor(
    private readonly store: CacheStore,
    private readonly settings: CacheSettings,
    private readonly observer?: CacheObserver,
  ) {
    this.boundMs = settings.boundMs ?? DEFAULT_BOUND_MS;
  }

  /**
   * Looks the request up: exact key first, then near-duplicates of the last
   * user turn filed under the same band keys, with the same preceding turns
   * and invariants and a similarity at least GW_CACHE_SIMILARITY.
   */
  async lookup(org: string, route: CacheRoute, keys: StageCacheKeys): Promise<CacheLookup> {
    // the org, provider, model and stream flag join the worker's body scope in every key
    const scope = digest(org, route.provider, route.model, route.stream ? 'stream' : 'whole', keys.scope);
    try {
      const result = await within(this.find(org, digest(scope, keys.exact), scope, keys.near), this.boundMs);
      this.observer?.lookedUp(result.kind);
      return result;
    } catch (err) {
      this.observer?.lookedUp('error');
      return { kind: 'error', reason: reasonOf(err) };
    }
  }

  /** the band keys are digested only past an exact miss: a hit needs none of them */
  private async find(org: string, id: string, scope: string, near: StageCacheKeys['near']): Promise<CacheLookup> {
    const exact = await this.store.get(org, id);
    if (exact !== undefined) return { kind: 'hit', reply: exact, match: 'exact', similarity: 1 };
    if (near === undefined) return { kind: 'miss', recordKey: { org, id } };
    const mine: StoredSignature = { preceding: near.preceding, invariants: near.invariants, minhash: near.minhash, vector: near.vector };
    const bands = near.bands.map((b) => digest(scope, b));
    const key: RecordKey = { org, id, near: { signature: mine, bands } };
    let best: { id: string; similarity: number } | undefined;
    for (const c of await this.store.candidates(org, bands, MAX_CANDIDATES)) {
      if (c.id === id || c.signature.preceding !== mine.preceding || c.signature.invariants !== mine.invariants) continue;
      const s = similarity(mine, c.signature);
      if (best === undefined || s > best.similarity) best = { id: c.id, similarity: s };
    }
    if (best !== undefined && best.similarity >= this.settings.similarity) {
      const reply = await this.store.get(org, best.id);
      if (reply !== undefined) return { kind: 'hit', reply, match: 'near', similarity: best.similarity };
    }
    return { kind: 'miss', recordKey: key, ...(best && { similarity: best.similarity }) };
  }

  /**
   * Stores a complete 2xx reply under a miss's record key. Resolves false
   * when it was not stored (not 2xx, empty, too large, or the store failed);
   * never rejects. Await it before the reply ends so every replica can read
   * the entry once the caller has the reply.
   */
  async record(key: RecordKey, reply: CachedReply): Promise<boolean> {
    if (reply.status < 200 || reply.status > 299) return false;
    if (reply.body === undefined && (reply.events === undefined || reply.events.length === 0)) return false;
    if (entryBytes(reply) > this.maxEntryBytes) return false;
    try {
      await within(this.store.put(key.org, key.id, { reply, ...(key.near && { near: key.near }) }), this.boundMs);
      return true;
    } catch {
      return false;
    }
  }

  /** The most a stored reply (or a recorded stream) may hold. */
  get maxEntryBytes(): number {
    return Math.floor(this.settings.maxBytes / 16);
  }

  /**
   * Shadow mode's false-hit measure: whether the reply a would-be hit would
   * have served has the same content text as the live one.
   */
  shadowCompare(stored: CachedReply, live: CachedReply): boolean {
    const matched = replyText(stored) === replyText(live);
    this.observer?.shadowCompared(matched);
    return matched;
  }
}
