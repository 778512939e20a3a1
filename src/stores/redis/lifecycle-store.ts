import { readFileSync } from 'node:fs';
import type { FeedbackStore } from '../../lifecycle/feedback.js';
import { FEEDBACK_RETENTION_MS } from '../../lifecycle/feedback.js';
import type { TaskOutcome } from '../../lifecycle/scorecard.js';
import type { SweepLease } from '../../lifecycle/sweep.js';
import { TRANSITIONS_KEPT, type SkillId, type TransitionLog, type TransitionRecord } from '../../tenancy/skills.js';
import { redisClient, type RedisClient, type RedisTarget } from './client.js';
import type { RedisKeys } from './prefixes.js';

const DAY_MS = 86_400_000;
/** day buckets read for feedback: every bucket the retention can still hold */
const FEEDBACK_DAYS = Math.ceil(FEEDBACK_RETENTION_MS / DAY_MS) + 1;
/** bound on one lifecycle store command */
const COMMAND_TIMEOUT_MS = 5000;

/** take the lease when free, renew it when held by `token`; 1 when held afterwards */
const HOLD_LEASE = `
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
if holder then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
return 1`;
const RELEASE_LEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

type LeaseRedis = RedisClient & {
  gwHoldLease(key: string, token: string, ttlMs: number): Promise<number>;
  gwReleaseLease(key: string, token: string): Promise<number>;
  gwFeedbackOutcomes(numKeys: number, ...args: string[]): Promise<Array<number | string>>;
  gwHashPairs(key: string): Promise<string[]>;
};

const feedbackOutcomes = readFileSync(new URL('./feedback-outcomes.lua', import.meta.url), 'utf8');

/**
 * The lifecycle's Redis state on one connection: each key's transition history
 * (a capped list per key and skill), task feedback (a hash per tenant and UTC
 * day, expiring after the retention) and the breaker sweep's lease.
 */
export class RedisLifecycleStore implements TransitionLog, FeedbackStore, SweepLease {
  private readonly redis: LeaseRedis;

  constructor(
    target: RedisTarget,
    private readonly keys: RedisKeys,
    private readonly token: string,
  ) {
    this.redis = redisClient(target, { connectionName: `${keys.sweepLease}:lifecycle`, maxRetriesPerRequest: 1, commandTimeout: COMMAND_TIMEOUT_MS }) as LeaseRedis;
    this.redis.defineCommand('gwHoldLease', { numberOfKeys: 1, lua: HOLD_LEASE });
    this.redis.defineCommand('gwReleaseLease', { numberOfKeys: 1, lua: RELEASE_LEASE });
    this.redis.defineCommand('gwFeedbackOutcomes', { lua: feedbackOutcomes });
    // HGETALL's flat reply as it is: ioredis would build an object field by field, which costs more than the read
    this.redis.defineCommand('gwHashPairs', { numberOfKeys: 1, lua: "return redis.call('HGETALL', KEYS[1])" });
    // a failed command rejects to its caller; the connection's own errors are expected while Redis is away
    this.redis.on('error', () => undefined);
  }

  async start(): Promise<void> {
    await this.redis.connect();
  }

  async close(): Promise<void> {
    await this.redis.gwReleaseLease(this.keys.sweepLease, this.token).catch(() => undefined);
    this.redis.disconnect();
  }

  async append(t: TransitionRecord): Promise<void> {
    const key = this.keys.transitions(t.key_id, t.skill_id);
    await this.redis.multi().lpush(key, JSON.stringify(t)).ltrim(key, 0, TRANSITIONS_KEPT - 1).exec();
  }

  async recent(keyId: string, skill: SkillId, limit: number): Promise<TransitionRecord[]> {
    const items = await this.redis.lrange(this.keys.transitions(keyId, skill), 0, limit - 1);
    return items.map((text) => JSON.parse(text) as TransitionRecord);
  }

  async record(tenant: string, id: string, outcome: TaskOutcome): Promise<void> {
    const key = this.keys.feedback(tenant, Math.floor(Date.now() / DAY_MS));
    await this.redis.multi().hset(key, id, outcome).pexpire(key, FEEDBACK_RETENTION_MS).exec();
  }

  async outcomes(tenant: string, ids: readonly string[]): Promise<Map<string, TaskOutcome>> {
    const out = new Map<string, TaskOutcome>();
    if (ids.length === 0) return out;
    const today = Math.floor(Date.now() / DAY_MS);
    // oldest day first, so a later word on the same id overwrites an earlier one
    const days = Array.from({ length: FEEDBACK_DAYS }, (_, i) => this.keys.feedback(tenant, today - FEEDBACK_DAYS + 1 + i));
    const take = (id: string, v: unknown) => {
      if (v === 'success' || v === 'failure') out.set(id, v);
    };
    // whichever travels less: everything the tenant filed, or the ids asked about (a scorecard may ask about many thousands)
    const counting = this.redis.pipeline();
    for (const d of days) counting.hlen(d);
    const sizes = ((await counting.exec()) ?? []).map(([err, n]) => {
      if (err) throw err;
      return n as number;
    });
    const filed = sizes.reduce((a, b) => a + b, 0);
    if (filed === 0) return out;
    if (filed <= ids.length) {
      const wanted = new Set(ids);
      const pipeline = this.redis.pipeline();
      for (const [i, d] of days.entries()) if ((sizes[i] ?? 0) > 0) void (pipeline as unknown as LeaseRedis).gwHashPairs(d);
      for (const [err, pairs] of (await pipeline.exec()) ?? []) {
        if (err) throw err;
        const flat = pairs as string[];
        for (let i = 0; i + 1 < flat.length; i += 2) if (wanted.has(flat[i] as string)) take(flat[i] as string, flat[i + 1]);
      }
      return out;
    }
    const found = await this.redis.gwFeedbackOutcomes(days.length, ...days, ...ids);
    for (let i = 0; i + 1 < found.length; i += 2) take(ids[Number(found[i]) - 1] as string, found[i + 1]);
    return out;
  }

  async hold(ttlMs: number): Promise<boolean> {
    return (await this.redis.gwHoldLease(this.keys.sweepLease, this.token, ttlMs)) === 1;
  }
}
