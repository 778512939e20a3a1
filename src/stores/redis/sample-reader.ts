import { GatewayError } from '../../errors.js';
import { addTotals, isArm, SkillSamples, type ArmTotals } from '../../lifecycle/samples.js';
import type { SampleQuery, SampleSource } from '../../lifecycle/sources.js';
import { redisClient, type RedisClient, type RedisTarget } from './client.js';
import type { RedisKeys } from './prefixes.js';
import { hourOf, MINUTE_WINDOW_MAX_MS, minuteOf, parseSampleField, parseTaskValue } from './sample-fields.js';

export interface SampleReaderOptions {
  target: RedisTarget;
  keys: RedisKeys;
  /** a read that takes longer is 504 store_timeout */
  boundMs: number;
}

/**
 * Reads the fleet's scorecard samples from Redis (RedisSampleWriter keeps
 * them): the hashes of the window, added up by group. A read costs the
 * window's hours, arms and tasks, not its requests. A window of up to an hour
 * starts at a whole minute (its first minute is read whole): the minutes of
 * its first hour, then the hours after it; a longer window starts at a whole
 * hour (its first hour is read whole).
 */
export class RedisSampleReader implements SampleSource {
  readonly kind = 'durable';
  private readonly redis: RedisClient & { gwHashPairs(key: string): Promise<string[]> };

  constructor(private readonly opts: SampleReaderOptions) {
    // a window's hashes are all one tenant's (one hash tag): one pipeline reaches them on a cluster too
    const redis = redisClient(opts.target, { connectionName: 'gw-scorecard-reader', commandTimeout: opts.boundMs, maxRetriesPerRequest: 1 });
    // HGETALL's flat reply as it is: ioredis would build an object field by field, which costs more than the read
    redis.defineCommand('gwHashPairs', { numberOfKeys: 1, lua: "return redis.call('HGETALL', KEYS[1])" });
    redis.on('error', () => undefined);
    this.redis = redis as typeof this.redis;
  }

  async start(): Promise<void> {
    await this.redis.connect();
  }

  close(): void {
    this.redis.disconnect();
  }

  async samples(tenant: string, q: SampleQuery): Promise<Map<string, SkillSamples>> {
    const pipeline = this.redis.pipeline();
    for (const [unit, n] of hashesOf(q.sinceMs, q.nowMs)) void (pipeline as unknown as typeof this.redis).gwHashPairs(this.opts.keys.samples(tenant, q.skill, unit, n));
    let results: Array<[Error | null, unknown]>;
    try {
      results = (await pipeline.exec()) ?? [];
    } catch (err) {
      throw new GatewayError('store_timeout', `the scorecard store did not answer within ${this.opts.boundMs / 1000} s: ${(err as Error).message}`, { cause: err });
    }
    const out = new Map<string, SkillSamples>();
    for (const [err, reply] of results) {
      if (err) throw new GatewayError('store_timeout', `the scorecard store did not answer: ${err.message}`, { cause: err });
      const pairs = reply as string[];
      for (let i = 0; i + 1 < pairs.length; i += 2) {
        const value = pairs[i + 1] as string;
        const f = parseSampleField(pairs[i] as string);
        if (f === undefined || !isArm(f.arm)) continue;
        const group = q.group(f.keyId);
        if (group === undefined) continue;
        const transition = q.since?.get(f.keyId);
        if (transition !== undefined && f.epoch !== transition.id) continue;
        let samples = out.get(group);
        if (samples === undefined) out.set(group, (samples = new SkillSamples()));
        const arm = samples.arms[f.arm];
        if (f.op === 'c') addTotals(arm.totals, JSON.parse(value) as ArmTotals);
        else if (f.op === 't') arm.addTask(f.item, parseTaskValue(value));
        else arm.sessions.add(f.item);
      }
    }
    return out;
  }
}

/** the hashes covering [since, now]: minute hashes for the first hour of a short window, hour hashes for the rest */
export function hashesOf(sinceMs: number, nowMs: number): Array<['m' | 'h', number]> {
  const out: Array<['m' | 'h', number]> = [];
  const lastHour = hourOf(nowMs);
  let firstHour = hourOf(sinceMs);
  if (nowMs - sinceMs <= MINUTE_WINDOW_MAX_MS) {
    // the minutes from the window's start to the end of its hour, or to now within the current hour
    const end = firstHour < lastHour ? (firstHour + 1) * 60 - 1 : minuteOf(nowMs);
    for (let m = minuteOf(sinceMs); m <= end; m++) out.push(['m', m]);
    firstHour++;
  }
  for (let h = firstHour; h <= lastHour; h++) out.push(['h', h]);
  return out;
}
