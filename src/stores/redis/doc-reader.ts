import type { Collection } from '../types.js';
import { redisClient, type RedisClient, type RedisTarget } from './client.js';
import type { RedisKeys } from './prefixes.js';

/**
 * Reads one document straight from Redis, past the mirror, on its own
 * connection: for the rare lookup that must not trust a mirror that may not
 * have caught up yet (a stored provider key written through another replica a
 * moment ago). Callers bound the wait themselves.
 */
export class RedisDocReader {
  private readonly redis: RedisClient;

  constructor(
    target: RedisTarget,
    private readonly keys: RedisKeys,
  ) {
    this.redis = redisClient(target, { maxRetriesPerRequest: 1 });
    // failed reads reject to their caller (a bounded store_timeout); the connection's own errors are expected while Redis is away
    this.redis.on('error', () => undefined);
  }

  async start(): Promise<void> {
    await this.redis.connect();
  }

  async read(collection: Collection, id: string): Promise<unknown> {
    const text = await this.redis.hget(this.keys.doc(collection), id);
    return text === null ? undefined : (JSON.parse(text) as unknown);
  }

  close(): void {
    this.redis.disconnect();
  }
}
