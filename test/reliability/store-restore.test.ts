import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import type { RedisClient, RedisTarget } from '../../src/stores/redis/client.js';
import { RedisDocStore } from '../../src/stores/redis/doc-store.js';
import { redisKeys, type RedisKeys } from '../../src/stores/redis/prefixes.js';
import { COLLECTIONS, type Collection, type StoreLog } from '../../src/stores/types.js';
import { dropRedisPrefix, newRedisPrefix, REDIS_URL, TEST_REDIS, testRedis } from '../helpers/gateway.js';
import { startRedisProxy } from '../helpers/redis-proxy.js';
import { eventually } from '../helpers/wait.js';

/**
 * When Redis comes back without the configuration documents, every replica
 * keeps serving from its mirror and exactly one writes it back. Each replica
 * here is a RedisDocStore with connections of its own on one real Redis; a
 * restore is seen in the line the restoring replica logs.
 */
const RESTORED_LINE = "configuration store restored from this replica's mirror";

/** What the gateway keeps in each collection, shaped as it writes it: a tenant, a live and a revoked key, a stored provider key, a cap, an access list, a skill and its transition. */
const STATE: ReadonlyArray<[Collection, string, object]> = [
  ['orgs', 'acme', { org_id: 'acme', rps_cap: 100 }],
  ['orgs', 'beta', { org_id: 'beta', rps_cap: 100 }],
  ['dev_keys', 'dk-live', { key_id: 'dk-live', org_id: 'acme', revoked_at: null }],
  ['dev_keys', 'dk-revoked', { key_id: 'dk-revoked', org_id: 'acme', revoked_at: '2024-01-01T00:00:00.000Z' }],
  ['vendor_keys', 'acme:openai', { org_id: 'acme', provider: 'openai', sealed: 'v1:sealed-bytes' }],
  ['org_policy', 'spend_cap:acme', { cap_usd: 12, period: 'day' }],
  ['org_policy', 'model_access:beta', { models: ['gpt-4o'] }],
  ['key_skills', 'dk-live', { guardrails: 'shadow' }],
  ['transitions', 'dk-live:guardrails', { from: 'off', to: 'shadow' }],
];

/** A replica's store and every line it logged. */
interface Replica {
  store: RedisDocStore;
  lines: string[];
}

/**
 * A deployment's namespace and the replicas opened on it; at the end of the
 * test the replicas close before the namespace is dropped (a replica still
 * open would take the drop for a loss and write its mirror back).
 */
function deployment(): { keys: RedisKeys; replica(target: RedisTarget): Promise<Replica> } {
  const prefix = newRedisPrefix();
  const keys = redisKeys(prefix);
  const stores: RedisDocStore[] = [];
  after(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await dropRedisPrefix(prefix);
  });
  return {
    keys,
    async replica(target) {
      const lines: string[] = [];
      const log: StoreLog = { warn: (_obj, msg) => lines.push(msg), error: (_obj, msg) => lines.push(msg) };
      const store = new RedisDocStore(target, keys, log);
      stores.push(store);
      await store.start();
      return { store, lines };
    },
  };
}

const restores = (replicas: readonly Replica[]) => replicas.flatMap((r) => r.lines).filter((l) => l === RESTORED_LINE).length;

/** Every collection's hash as Redis holds it. */
const documentsIn = async (admin: RedisClient, keys: RedisKeys) => Promise.all(COLLECTIONS.map((c) => admin.hgetall(keys.doc(c))));

/** Redis losing this deployment's documents, as a restart without persistence does: the marker and every hash, at once. */
const wipe = (admin: RedisClient, keys: RedisKeys) => admin.multi().del(keys.docGeneration, ...COLLECTIONS.map((c) => keys.doc(c))).exec();

describe('Redis loses the documents under several replicas: one restores, the others follow', () => {
  it('three replicas see the loss at once: exactly one writes its mirror back, and Redis holds every document as it was', async () => {
    const { keys, replica } = deployment();
    const admin = testRedis();
    after(() => admin.disconnect());
    const replicas = [await replica(TEST_REDIS), await replica(TEST_REDIS), await replica(TEST_REDIS)];
    for (const [i, [collection, id, doc]] of STATE.entries()) await replicas[i % replicas.length]!.store.put(collection, id, doc);
    const before = await documentsIn(admin, keys);
    const generation = await admin.get(keys.docGeneration);
    assert.ok(generation);

    await wipe(admin, keys);
    await eventually(async () => (await admin.get(keys.docGeneration)) === generation, 'the restore');
    assert.deepEqual(await documentsIn(admin, keys), before, 'every document back as it was');
    // a write through a replica lands only once it follows the restored generation again
    for (const [i, r] of replicas.entries()) await r.store.put('orgs', `after-${i}`, { n: i });

    assert.equal(restores(replicas), 1, replicas.map((r) => r.lines.join(' | ')).join('\n'));
    for (const r of replicas) for (const [collection, id, doc] of STATE) assert.deepEqual(r.store.get(collection, id), doc, `${collection}/${id} served from every mirror`);
  });

  it('a replica whose restore was in transit when its lease lapsed does not write it over the restore of another and the writes made since', async () => {
    const { keys, replica } = deployment();
    const admin = new Redis(REDIS_URL);
    after(() => admin.disconnect());
    const towardsA = await startRedisProxy();
    const towardsB = await startRedisProxy();
    after(() => Promise.all([towardsA.close(), towardsB.close()]));
    const a = await replica(towardsA.url);
    const b = await replica(towardsB.url);
    for (const [collection, id, doc] of STATE) await a.store.put(collection, id, doc);
    await eventually(() => STATE.every(([collection, id]) => b.store.get(collection, id) !== undefined), 'b follows');

    // b is cut off, so a alone sees the loss; a's restore (the one write announcing it, ["r", …]) is held in transit
    towardsB.hang();
    towardsA.hangOnText('["r",');
    await wipe(admin, keys);
    await eventually(() => towardsA.holding(), "a's restore in transit");
    // a stays away past its lease: the lease lapses, b comes back, sees the loss and restores
    await admin.del(keys.docRestoreLease);
    towardsB.resume();
    await eventually(() => restores([b]) === 1, "b's restore");
    // a tenant acts on the restored store: a key revoked
    const revoked = { key_id: 'dk-live', org_id: 'acme', revoked_at: '2024-06-01T00:00:00.000Z' };
    await b.store.put('dev_keys', 'dk-live', revoked);

    // a's partition ends in a reset: its client connects again and sends again what was never answered
    towardsA.cut();
    await eventually(() => restores([a]) > 0 || (a.store.get<{ revoked_at: string | null }>('dev_keys', 'dk-live')?.revoked_at ?? null) !== null, 'a settles');

    assert.equal(restores([a, b]), 1, `a restored over b: ${a.lines.join(' | ')}`);
    assert.equal(await admin.hget(keys.doc('dev_keys'), 'dk-live'), JSON.stringify(revoked), 'the revocation made after the restore stands in Redis');
    for (const r of [a, b]) assert.deepEqual(r.store.get('dev_keys', 'dk-live'), revoked, 'and in every mirror');
  });
});
