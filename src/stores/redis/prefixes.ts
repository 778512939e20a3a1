/**
 * Every Redis key and channel the gateway uses, in one place, under the
 * deployment's namespace (GW_REDIS_PREFIX) so deployments and test runs that
 * share a Redis never see each other's state.
 */
export function redisKeys(prefix: string) {
  return {
    doc: (collection: string) => `${prefix}doc:${collection}`,
    docChannel: `${prefix}doc-changes`,
    /** the id of the data set the documents belong to, written with them: missing or changed = Redis lost (or replaced) them */
    docGeneration: `${prefix}doc-generation`,
    /** held (SET NX PX) by the one replica writing its mirror back into a Redis that lost the documents */
    docRestoreLease: `${prefix}doc-restore-lease`,
    /** spend of one org and period kind in its current period: period, settled, reserved and each reservation (hash tag keeps the pair on one slot) */
    meterSpend: (account: string) => `${prefix}meter:{${account}}:spend`,
    /** lease expiry of each reservation of that account (zset) */
    meterLeases: (account: string) => `${prefix}meter:{${account}}:leases`,
    /** a shared rate-limit token bucket */
    meterRate: (name: string) => `${prefix}meter:rate:${name}`,
  };
}

export type RedisKeys = ReturnType<typeof redisKeys>;
