/**
 * Every Redis key and channel the gateway uses, in one place, under the
 * deployment's namespace (GW_REDIS_PREFIX) so deployments and test runs that
 * share a Redis never see each other's state.
 *
 * Keys one script or transaction touches together carry the same hash tag
 * (the part in braces), so on a Redis Cluster they live in one hash slot:
 * the configuration documents all share `{doc}` (their scripts write a
 * collection, check the generation marker and publish in one step; the whole
 * configuration is small and read from each replica's mirror, so one slot
 * holds it); metering, lifecycle and cache keys are tagged by their account,
 * key or org. A key alone in its script needs no tag.
 */
export function redisKeys(prefix: string) {
  return {
    doc: (collection: string) => `${prefix}{doc}:${collection}`,
    docChannel: `${prefix}{doc}-changes`,
    /** where replicas acknowledge applying a change to the replica (its origin id) that wrote it */
    docAcks: (origin: string) => `${prefix}{doc}-acks:${origin}`,
    /** the id of the data set the documents belong to, written with them: missing or changed = Redis lost (or replaced) them */
    docGeneration: `${prefix}{doc}-generation`,
    /** held (SET NX PX) by the one replica writing its mirror back into a Redis that lost the documents */
    docRestoreLease: `${prefix}{doc}-restore-lease`,
    /** the documents as versions before the hash tags wrote them: adopted once (doc-store.ts, adoptLegacy) */
    legacyDoc: (collection: string) => `${prefix}doc:${collection}`,
    legacyDocGeneration: `${prefix}doc-generation`,
    /** spend of one org and period kind in its current period: period, settled, reserved and each reservation (hash tag keeps the pair on one slot) */
    meterSpend: (account: string) => `${prefix}meter:{${account}}:spend`,
    /** lease expiry of each reservation of that account (zset) */
    meterLeases: (account: string) => `${prefix}meter:{${account}}:leases`,
    /** a shared rate-limit token bucket */
    meterRate: (name: string) => `${prefix}meter:rate:${name}`,
    /** one key's transitions of one skill, newest first, capped (hash tag: the key) */
    transitions: (keyId: string, skill: string) => `${prefix}lc:{${keyId}}:tr:${skill}`,
    /** a tenant's task feedback filed on one UTC day (hash tag: the tenant) */
    feedback: (tenant: string, day: number) => `${prefix}lc:fb:{${tenant}}:${day}`,
    /** one minute's (m) or hour's (h) scorecard samples of a tenant's skill, by key, transition and arm (hash tag: the tenant) */
    samples: (tenant: string, skill: string, unit: 'm' | 'h', n: number) => `${prefix}sc:{${tenant}}:${skill}:${unit}${n}`,
    /** marks a batch of a tenant's samples as added (hash tag: the tenant) */
    samplesSeen: (tenant: string, batch: string) => `${prefix}sc:{${tenant}}:seen:${batch}`,
    /** the breaker sweep's lease: the replica holding it sweeps */
    sweepLease: `${prefix}lc:sweep-lease`,
    /** a semantic-cache entry, its near-duplicate signature and an LSH band's entry ids: hash-tagged per org (one slot per org) */
    cacheEntry: (org: string, id: string) => `${prefix}cache:{${org}}:e:${id}`,
    cacheSignature: (org: string, id: string) => `${prefix}cache:{${org}}:s:${id}`,
    cacheBand: (org: string, band: string) => `${prefix}cache:{${org}}:b:${band}`,
    /** a destination's cool-down after a failure (merit-order dispatch), expiring with it: hash-tagged per org so one MGET reads a call's destinations */
    coolDown: (org: string, destination: string) => `${prefix}cool:{${org}}:${destination}`,
  };
}

export type RedisKeys = ReturnType<typeof redisKeys>;
