/**
 * Every Redis key and channel the gateway uses, in one place, under the
 * deployment's namespace (GW_REDIS_PREFIX) so deployments and test runs that
 * share a Redis never see each other's state.
 */
export function redisKeys(prefix: string) {
  return {
    doc: (collection: string) => `${prefix}doc:${collection}`,
    docChannel: `${prefix}doc-changes`,
    /** spend of one org and period kind in its current period: period, settled, reserved and each reservation (hash tag keeps the pair on one slot) */
    meterSpend: (account: string) => `${prefix}meter:{${account}}:spend`,
    /** lease expiry of each reservation of that account (zset) */
    meterLeases: (account: string) => `${prefix}meter:{${account}}:leases`,
    /** a shared rate-limit token bucket */
    meterRate: (name: string) => `${prefix}meter:rate:${name}`,
    /** a semantic-cache entry, its near-duplicate signature and an LSH band's entry ids: hash-tagged per org (one slot per org) */
    cacheEntry: (org: string, id: string) => `${prefix}cache:{${org}}:e:${id}`,
    cacheSignature: (org: string, id: string) => `${prefix}cache:{${org}}:s:${id}`,
    cacheBand: (org: string, band: string) => `${prefix}cache:{${org}}:b:${band}`,
  };
}

export type RedisKeys = ReturnType<typeof redisKeys>;
