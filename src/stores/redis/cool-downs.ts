import { LATE, within } from '../bounded-wait.js';
import { LocalCoolDowns, type CoolDowns } from '../cool-downs.js';
import { redisClient, type RedisClient, type RedisTarget } from './client.js';
import type { RedisKeys } from './prefixes.js';

/** The longest a call waits on Redis for the cool-downs before it goes on with this replica's own. */
export const COOL_DOWN_READ_BOUND_MS = 50;
/** After Redis failed or was late, calls read only this replica's cool-downs for this long. */
const AWAY_MS = 5_000;

/**
 * Cool-downs shared by every replica: a failed destination's cool-down is a
 * Redis key that expires with it (SET PX, so no two clocks need agree), and a
 * call reads its destinations' keys in one MGET (they share the org's hash
 * slot). Fail-open: Redis never fails or holds up a call. A cool-down is
 * written without being waited for; a read answers within
 * COOL_DOWN_READ_BOUND_MS or the call goes on with this replica's own
 * cool-downs, which it also uses alone for AWAY_MS after Redis failed.
 */
export class RedisCoolDowns implements CoolDowns {
  private readonly redis: RedisClient;
  private readonly local: LocalCoolDowns;
  private awayUntil = 0;

  constructor(
    target: RedisTarget,
    private readonly keys: RedisKeys,
    private readonly clock: () => number = Date.now,
  ) {
    this.local = new LocalCoolDowns(clock);
    this.redis = redisClient(target, { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: COOL_DOWN_READ_BOUND_MS, connectionName: 'gw-cool-downs' });
    // failures surface per command (the call goes on with local state); the client keeps reconnecting
    this.redis.on('error', () => undefined);
  }

  /** Connects; a Redis that is away now is not fatal: calls use local cool-downs until it is back. */
  async start(): Promise<void> {
    await this.redis.connect().catch(() => undefined);
  }

  cooling(org: string, ids: readonly string[]): ReadonlySet<string> | Promise<ReadonlySet<string>> {
    const here = this.local.cooling(org, ids);
    if (here.size === ids.length || this.clock() < this.awayUntil) return here;
    const read = this.redis.mget(ids.map((id) => this.keys.coolDown(org, id)));
    return within(read, COOL_DOWN_READ_BOUND_MS).then(
      (values) => {
        if (values === LATE) return this.away(here);
        const out = new Set(here);
        values.forEach((v, i) => v !== null && out.add(ids[i] as string));
        return out;
      },
      () => this.away(here),
    );
  }

  coolDown(org: string, id: string, ms: number): void {
    this.local.coolDown(org, id, ms);
    if (this.clock() < this.awayUntil) return;
    this.redis.set(this.keys.coolDown(org, id), '1', 'PX', ms).catch(() => this.away(undefined));
  }

  close(): void {
    this.redis.disconnect();
  }

  private away<T>(fallback: T): T {
    this.awayUntil = this.clock() + AWAY_MS;
    return fallback;
  }
}
