/**
 * The semantic cache's store: complete 2xx replies under keys the cache
 * derives (cache/lookup.ts), every key within one org. Embedded: in process,
 * bounded by entries and bytes. Redis: shared by every replica, each entry
 * with a TTL. Either may fail (Redis away or slow); the caller then relays
 * the request (fail-open).
 */

/** A stored reply, as the caller received it. */
export interface CachedReply {
  status: number;
  contentType: string;
  /** a whole reply's vendor bytes */
  body?: Uint8Array;
  /** a stream's events in order, each one event's bytes, replayed one by one */
  events?: Uint8Array[];
  /** the reply's token usage as the pipeline read it (the tokens a hit saves) */
  usage?: { input_tokens: number; output_tokens: number };
}

/** The fixed-size part of a stored last user turn that near-duplicate lookups compare. */
export interface StoredSignature {
  preceding: string;
  invariants: string;
  minhash: Uint32Array;
  vector: Float32Array;
}

export interface CacheCandidate {
  id: string;
  signature: StoredSignature;
}

export interface CacheEntry {
  reply: CachedReply;
  /** with a signature, the entry is also found by its LSH band keys */
  near?: { signature: StoredSignature; bands: readonly string[] };
}

export interface CacheStore {
  start(): Promise<void>;
  get(org: string, id: string): Promise<CachedReply | undefined>;
  /** entries filed under any of these band keys, most recent first, at most `limit` */
  candidates(org: string, bands: readonly string[], limit: number): Promise<CacheCandidate[]>;
  put(org: string, id: string, entry: CacheEntry): Promise<void>;
  close(): Promise<void>;
}

/** How many entries one band key keeps (the newest): a candidate lookup reads at most BANDS × this. */
export const BAND_DEPTH = 8;

/** Bytes an entry holds: its reply plus a fixed allowance for keys and signature. */
export const entryBytes = (reply: CachedReply): number =>
  2048 + (reply.body?.byteLength ?? 0) + (reply.events ?? []).reduce((n, e) => n + e.byteLength + 16, 0);
