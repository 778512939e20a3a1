import { readFileSync } from 'node:fs';
import type { CapPeriod, MeterAccount, MeterStore, PeriodFigures, ReserveRequest, ReserveResult, TokenBucketSpec, TokenGrant } from '../meter.js';
import { redisClient, type RedisClient, type RedisTarget } from './client.js';
import type { RedisKeys } from './prefixes.js';

interface MeterCommands {
  gwMeterReserve(spend: string, leases: string, id: string, amount: string, cap: string, leaseMs: string, kind: CapPeriod): Promise<[number, string, string, string, number]>;
  gwMeterSettle(spend: string, leases: string, id: string, cost: string, period: string): Promise<number>;
  gwMeterFigures(spend: string, kind: CapPeriod): Promise<[string, string, string, number]>;
  gwMeterRenew(leases: string, leaseMs: string, ...ids: string[]): Promise<number>;
  gwMeterTake(bucket: string, want: string, rate: string, capacity: string): Promise<[number, number]>;
}

const lua = (name: string): string => readFileSync(new URL(`./${name}.lua`, import.meta.url), 'utf8');
/** a spend script with the period functions it is timed by */
const periodLua = (name: string): string => `${lua('meter-period')}\n${lua(name)}`;

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
 * lease or about which spend-cap period a call falls in. A dedicated connection without an offline queue: when Redis is away
 * calls fail at once instead of queueing behind the outage, and the policy
 * stages relay the call (fail-open).
 */
export class RedisMeterStore implements MeterStore {
  private readonly redis: RedisClient & MeterCommands;

  constructor(
    target: RedisTarget,
    private readonly keys: RedisKeys,
    opts: RedisMeterOptions = {},
  ) {
    const redis = redisClient(target, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: opts.commandTimeoutMs ?? 1000,
      connectionName: 'gw-meter',
    });
    // connection errors surface per command; the client keeps reconnecting on its own
    redis.on('error', () => undefined);
    redis.defineCommand('gwMeterReserve', { numberOfKeys: 2, lua: periodLua('meter-reserve') });
    redis.defineCommand('gwMeterSettle', { numberOfKeys: 2, lua: lua('meter-settle') });
    redis.defineCommand('gwMeterFigures', { numberOfKeys: 1, lua: periodLua('meter-figures') });
    redis.defineCommand('gwMeterRenew', { numberOfKeys: 1, lua: lua('meter-renew') });
    redis.defineCommand('gwMeterTake', { numberOfKeys: 1, lua: lua('meter-take') });
    this.redis = redis as RedisClient & MeterCommands;
  }

  async start(): Promise<void> {
    await this.redis.connect();
  }

  async reserve(r: ReserveRequest): Promise<ReserveResult> {
    const [admitted, settled, reserved, period, resetsAt] = await this.redis.gwMeterReserve(
      this.keys.meterSpend(r.account),
      this.keys.meterLeases(r.account),
      r.id,
      String(r.amount),
      String(r.cap),
      String(r.leaseMs),
      r.kind,
    );
    return { admitted: admitted === 1, settled: Number(settled), reserved: Number(reserved), period, resetsAt };
  }

  async settle(account: MeterAccount, period: string, id: string, cost: number): Promise<void> {
    await this.redis.gwMeterSettle(this.keys.meterSpend(account), this.keys.meterLeases(account), id, String(cost), period);
  }

  async renew(account: MeterAccount, ids: readonly string[], leaseMs: number): Promise<void> {
    if (ids.length > 0) await this.redis.gwMeterRenew(this.keys.meterLeases(account), String(leaseMs), ...ids);
  }

  async figures(account: MeterAccount, kind: CapPeriod): Promise<PeriodFigures> {
    const [settled, reserved, period, resetsAt] = await this.redis.gwMeterFigures(this.keys.meterSpend(account), kind);
    return { settled: Number(settled), reserved: Math.max(0, Number(reserved)), period, resetsAt };
  }

  async take(name: string, want: number, spec: TokenBucketSpec): Promise<TokenGrant> {
    const [granted, waitMs] = await this.redis.gwMeterTake(this.keys.meterRate(name), String(want), String(spec.rate), String(spec.capacity));
    return { granted, waitMs };
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
