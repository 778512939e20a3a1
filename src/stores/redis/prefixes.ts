/**
 * Every Redis key and channel the gateway uses, in one place, under the
 * deployment's namespace (GW_REDIS_PREFIX) so deployments and test runs that
 * share a Redis never see each other's state.
 */
export function redisKeys(prefix: string) {
  return {
    doc: (collection: string) => `${prefix}doc:${collection}`,
    docChannel: `${prefix}doc-changes`,
  };
}

export type RedisKeys = ReturnType<typeof redisKeys>;
