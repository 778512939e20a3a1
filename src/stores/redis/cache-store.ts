import { BAND_DEPTH, type CacheCandidate, type CacheEntry, type CacheStore, type CachedReply, type StoredSignature } from '../cache.js';
import { redisClient, type RedisClient, type RedisTarget } from './client.js';
import type { RedisKeys } from './prefixes.js';

export interface RedisCacheOptions {
  ttlMs: number;
  /** a command not answered within this fails and the request is relayed (fail-open) */
  commandTimeoutMs?: number;
}

interface EncodedReply {
  s: number;
  t: string;
  b?: string;
  e?: string[];
  u?: CachedReply['usage'];
}

interface EncodedSignature {
  p: string;
  i: string;
  m: string;
  v: string;
}

const b64 = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
/** a fresh, aligned copy: a Buffer's offset in its pool may not suit a typed array */
const bytesOf = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'base64'));

const encodeReply = (r: CachedReply): string =>
  JSON.stringify({ s: r.status, t: r.contentType, ...(r.body && { b: b64(r.body) }), ...(r.events && { e: r.events.map(b64) }), ...(r.usage && { u: r.usage }) } satisfies EncodedReply);

function decodeReply(raw: string): CachedReply {
  const e = JSON.parse(raw) as EncodedReply;
  return { status: e.s, contentType: e.t, ...(e.b !== undefined && { body: bytesOf(e.b) }), ...(e.e && { events: e.e.map(bytesOf) }), ...(e.u && { usage: e.u }) };
}

const encodeSignature = (s: StoredSignature): string =>
  JSON.stringify({ p: s.preceding, i: s.invariants, m: b64(new Uint8Array(s.minhash.buffer, s.minhash.byteOffset, s.minhash.byteLength)), v: b64(new Uint8Array(s.vector.buffer, s.vector.byteOffset, s.vector.byteLength)) } satisfies EncodedSignature);

function decodeSignature(raw: string): StoredSignature {
  const e = JSON.parse(raw) as EncodedSignature;
  return { preceding: e.p, invariants: e.i, minhash: new Uint32Array(bytesOf(e.m).buffer), vector: new Float32Array(bytesOf(e.v).buffer) };
}

/**
 * The cache in Redis, shared by every replica. Each entry is written with its
 * signature and band memberships in one MULTI (all keys of an org share a
 * hash slot), each key with the TTL. A dedicated connection without an
 * offline queue and with a short command timeout: when Redis is away or slow
 * a call fails fast and the request is relayed.
 */
export class RedisCacheStore implements CacheStore {
  private readonly redis: RedisClient;

  constructor(
    target: RedisTarget,
    private readonly keys: RedisKeys,
    private readonly opts: RedisCacheOptions,
  ) {
    this.redis = redisClient(target, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: opts.commandTimeoutMs ?? 250,
      connectionName: 'gw-cache',
    });
    // failures surface per command (and the request is relayed); the client keeps reconnecting
    this.redis.on('error', () => undefined);
  }

  /** Connects; a Redis that is away now is not fatal: the cache misses until it is back. */
  async start(): Promise<void> {
    await this.redis.connect().catch(() => undefined);
  }

  async get(org: string, id: string): Promise<CachedReply | undefined> {
    const raw = await this.redis.get(this.keys.cacheEntry(org, id));
    return raw === null ? undefined : decodeReply(raw);
  }

  async candidates(org: string, bands: readonly string[], limit: number): Promise<CacheCandidate[]> {
    const pipeline = this.redis.pipeline();
    for (const band of bands) pipeline.lrange(this.keys.cacheBand(org, band), 0, BAND_DEPTH - 1);
    const ids = new Set<string>();
    for (const [err, list] of (await pipeline.exec()) ?? []) {
      if (err) throw err;
      for (const id of list as string[]) if (ids.size < limit) ids.add(id);
    }
    if (ids.size === 0) return [];
    const order = [...ids];
    const sigs = await this.redis.mget(order.map((id) => this.keys.cacheSignature(org, id)));
    return order.flatMap((id, i) => {
      const raw = sigs[i];
      return raw === null || raw === undefined ? [] : [{ id, signature: decodeSignature(raw) }];
    });
  }

  async put(org: string, id: string, entry: CacheEntry): Promise<void> {
    const ttl = this.opts.ttlMs;
    const tx = this.redis.multi().set(this.keys.cacheEntry(org, id), encodeReply(entry.reply), 'PX', ttl);
    if (entry.near !== undefined) {
      tx.set(this.keys.cacheSignature(org, id), encodeSignature(entry.near.signature), 'PX', ttl);
      for (const band of entry.near.bands) {
        const key = this.keys.cacheBand(org, band);
        tx.lpush(key, id).ltrim(key, 0, BAND_DEPTH - 1).pexpire(key, ttl);
      }
    }
    const results = await tx.exec();
    const failed = results?.find(([err]) => err !== null);
    if (results === null || failed) throw failed?.[0] ?? new Error('cache write discarded');
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
