import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { COLLECTIONS, Mirror, type Collection, type DocStore } from '../types.js';
import type { RedisKeys } from './prefixes.js';

/** How long a writer waits for its own change to come back through pub/sub. */
const ECHO_WAIT_MS = 1000;

/**
 * Redis-backed store: one hash per collection, a pub/sub channel announcing
 * every change. Each replica mirrors all collections and refetches a document
 * when told it changed; after a reconnect it reloads everything, since
 * messages published while it was away are lost.
 */
export class RedisDocStore extends Mirror implements DocStore {
  private readonly cmd: Redis;
  private readonly sub: Redis;
  private readonly origin = randomUUID();
  private readonly echoes = new Map<string, () => void>();
  private seq = 0;
  private readyOnce = false;

  constructor(
    url: string,
    private readonly keys: RedisKeys,
  ) {
    super();
    this.cmd = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2, enableOfflineQueue: true });
    this.sub = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: null });
  }

  async start(): Promise<void> {
    await this.cmd.connect();
    await this.sub.connect();
    this.sub.on('message', (_channel: string, message: string) => void this.onMessage(message));
    this.sub.on('ready', () => {
      if (this.readyOnce) void this.reload();
    });
    await this.sub.subscribe(this.keys.docChannel);
    await this.reload();
    this.readyOnce = true;
  }

  async put(collection: Collection, id: string, doc: unknown): Promise<void> {
    const text = JSON.stringify(doc);
    await this.cmd.hset(this.keys.doc(collection), id, text);
    this.apply(collection, id, JSON.parse(text));
    await this.announce(collection, id);
  }

  async delete(collection: Collection, id: string): Promise<boolean> {
    const n = await this.cmd.hdel(this.keys.doc(collection), id);
    this.apply(collection, id, undefined);
    await this.announce(collection, id);
    return n > 0;
  }

  async close(): Promise<void> {
    this.sub.disconnect();
    await this.cmd.quit().catch(() => undefined);
  }

  /**
   * Publishes the change and waits (bounded) until it comes back to us: Redis
   * has then delivered it to every subscribed replica, so a write acknowledged
   * to the caller is seen by the next request on any replica.
   */
  private async announce(collection: Collection, id: string): Promise<void> {
    const token = `${this.origin}:${++this.seq}`;
    const echoed = new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.echoes.delete(token);
        resolve();
      }, ECHO_WAIT_MS);
      this.echoes.set(token, () => {
        clearTimeout(timer);
        resolve();
      });
    });
    await this.cmd.publish(this.keys.docChannel, JSON.stringify([collection, id, token]));
    await echoed;
  }

  private async onMessage(message: string): Promise<void> {
    let parsed: [Collection, string, string];
    try {
      parsed = JSON.parse(message) as [Collection, string, string];
    } catch {
      return;
    }
    const [collection, id, token] = parsed;
    const echo = this.echoes.get(token);
    if (echo) {
      this.echoes.delete(token);
      echo();
      return;
    }
    if (!COLLECTIONS.includes(collection)) return;
    const text = await this.cmd.hget(this.keys.doc(collection), id);
    this.apply(collection, id, text === null ? undefined : JSON.parse(text));
  }

  private async reload(): Promise<void> {
    for (const c of COLLECTIONS) {
      const all = await this.cmd.hgetall(this.keys.doc(c));
      const map = this.data.get(c);
      if (!map) continue;
      for (const id of [...map.keys()]) if (!(id in all)) this.apply(c, id, undefined);
      for (const [id, text] of Object.entries(all)) this.apply(c, id, JSON.parse(text));
    }
  }
}
