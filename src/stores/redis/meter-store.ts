import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import type { MeterBucket, MeterStore, ReserveRequest, ReserveResult, SpendFigures, TokenBucketSpec, TokenGrant } from '../meter.js';
import type { RedisKeys } from './prefixes.js';

interface MeterCommands {
  gwMeterReserve(spend: string, leases: string, id: string, amount: string, cap: string, leaseMs: string, keepUntil: string): Promise<[number, string, string]>;
  gwMeterSettle(spend: string, leases: string, id: string, cost: string): Promise<number>;
  gwMeterRenew(leases: string, leaseMs: string, ...ids: string[]): Promise<number>;
  gwMeterTake(bucket: string, want: string, rate: string, capacity: string): Promise<[number, number]>;
}

const lua = (name: string): string => readFileSync(new URL(`./${name}.lua`, import.meta.url), 'utf8');

export interface RedisMeterOptions {
  /**
   * a command not answered within this fails (the caller fails open). Not
   * tighter: a stalled event loop fires the timer before it reads the reply,
   * and a spurious failure relaxes caps and limits.
   */
  commandTimeoutMs?: number;
}

/**
 * Metering shared by every replica: each operation is one Lua script, atomic
 * in Redis and timed by Redis TIME, so replica clocks never disagree about a
 * lease. A dedicated connection without an offline queue: when Redis is away
 * calls fail at once instead of queueing behind the outage, and the policy
 * stages relay the call (fail-open).
 */
export class RedisMeterStore implements MeterStore {
  private readonly redis: Redis & MeterCommands;

  constructor(
    url: string,
    private readonly keys: RedisKeys,
    opts: RedisMeterOptions = {},
  ) {
    const redis = new Redis(url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: opts.commandTimeoutMs ?? 1000,
      connectionName: 'gw-meter',
    });
    // connection errors surface per command; the client keeps reconnecting on its own
    redis.on('error', () => undefined);
    redis.defineCommand('gwMeterReserve', { numberOfKeys: 2, lua: lua('meter-reserve') });
    redis.defineCommand('gwMeterSettle', { numberOfKeys: 2, lua: lua('meter-settle') });
    redis.defineCommand('gwMeterRenew', { numberOfKeys: 1, lua: lua('meter-renew') });
    redis.defineCommand('gwMeterTake', { numberOfKeys: 1, lua: lua('meter-take') });
    this.redis = redis as Redis & MeterCommands;
  }

  async start(): Promise<void> {
    await this.redis.connect();
  }

  async reserve(r: ReserveRequest): Promise<ReserveResult> {
    const [admitted, settled, reserved] = await this.redis.gwMeterReserve(
      this.keys.meterSpend(r.bucket),
      this.keys.meterLeases(r.bucket),
      r.id,
      String(r.amount),
      String(r.cap),
      String(r.leaseMs),
      String(Math.ceil(r.keepUntil)),
    );
    return { admitted: admitted === 1, settled: Number(settled), reserved: Number(reserved) };
  }

  async settle(bucket: MeterBucket, id: string, cost: number): Promise<void> {
    await this.redis.gwMeterSettle(this.keys.meterSpend(bucket), this.keys.meterLeases(bucket), id, String(cost));
  }

  async renew(bucket: MeterBucket, ids: readonly string[], leaseMs: number): Promise<void> {
    if (ids.length > 0) await this.redis.gwMeterRenew(this.keys.meterLeases(bucket), String(leaseMs), ...ids);
  }

  async figures(bucket: MeterBucket): Promise<SpendFigures> {
    const [settled, reserved] = await this.redis.hmget(this.keys.meterSpend(bucket), 'settled', 'reserved');
    return { settled: Number(settled ?? 0), reserved: Math.max(0, Number(reserved ?? 0)) };
  }

  async take(name: string, want: number, spec: TokenBucketSpec): Promise<TokenGrant> {
    const [granted, waitMs] = await this.redis.gwMeterTake(this.keys.meterRate(name), String(want), String(spec.rate), String(spec.capacity));
    return { granted, waitMs };
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
