import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { redisKeys } from '../../src/stores/redis/prefixes.js';
import { call, type Answer } from '../helpers/api.js';
import { ADMIN_KEY, REDIS_URL, devKeySecret, type Bootstrap } from '../helpers/gateway.js';
import { startGatewayBehindProxy } from '../helpers/redis-proxy.js';

const ACME = devKeySecret('deadline-acme');
const VICTIM = devKeySecret('deadline-victim');
const BOOT: Bootstrap = {
  orgs: [{ org_id: 'acme', rps_cap: 100_000 }],
  dev_keys: [
    { org_id: 'acme', dev_key_id: 'dk-acme', api_key: ACME },
    { org_id: 'acme', dev_key_id: 'dk-victim', api_key: VICTIM },
  ],
};
const admin = { 'x-gw-admin-key': ADMIN_KEY };

/**
 * One configuration write per route family, each held in transit (after the
 * deadline's TIME passed) until the gateway answered 504, then released: the
 * store must drop it. `landed` reads what Redis holds and what the gateway
 * answers, past the write, once the held script has certainly reached Redis.
 */
interface Case {
  family: string;
  /** run before the stall, with Redis answering */
  prepare?: (gw: Gw) => Promise<void>;
  write: (gw: Gw) => Promise<Answer>;
  landed: (gw: Gw, redis: Redis, keys: ReturnType<typeof redisKeys>) => Promise<boolean>;
}
type Gw = Parameters<typeof call>[0];

const settingsOf = async (gw: Gw) => (await call(gw, '/api/v1/settings', { key: ACME })).json;

const CASES: Case[] = [
  {
    family: 'spend cap update',
    write: (gw) => call(gw, '/api/v1/spend_cap/update', { key: ACME, body: { cap_usd: 7 } }),
    landed: async (gw, redis, keys) => (await redis.hget(keys.doc('org_policy'), 'spend_cap:acme')) !== null || ((await settingsOf(gw))['spend_cap'] as { cap_usd: unknown }).cap_usd !== null,
  },
  {
    family: 'model access update',
    write: (gw) => call(gw, '/api/v1/model_access/update', { key: ACME, body: { models: ['gpt-4o'] } }),
    landed: async (gw, redis, keys) =>
      (await redis.hget(keys.doc('org_policy'), 'model_access:acme')) !== null || JSON.stringify((await settingsOf(gw))['model_access']) !== '{"models":null}',
  },
  {
    family: 'vendor key create',
    write: (gw) => call(gw, '/api/v1/vendor_key/create', { key: ACME, body: { provider: 'openai', api_key: 'sk-late-openai-1234' } }),
    landed: async (gw, redis, keys) => (await redis.hget(keys.doc('vendor_keys'), 'acme:openai')) !== null || JSON.stringify((await settingsOf(gw))['vendor_keys']) !== '[]',
  },
  {
    family: 'vendor key delete',
    prepare: async (gw) => assert.equal((await call(gw, '/api/v1/vendor_key/create', { key: ACME, body: { provider: 'genvendor', api_key: 'AIza-kept-gggg' } })).status, 200),
    write: (gw) => call(gw, '/api/v1/vendor_key/delete', { key: ACME, body: { provider: 'genvendor' } }),
    landed: async (gw, redis, keys) =>
      (await redis.hget(keys.doc('vendor_keys'), 'acme:genvendor')) === null || !JSON.stringify((await settingsOf(gw))['vendor_keys']).includes('genvendor'),
  },
  {
    family: 'admin org create',
    write: (gw) => call(gw, '/api/v1/admin/orgs', { headers: admin, body: { org_id: 'late-org' } }),
    landed: async (gw, redis, keys) =>
      (await redis.hget(keys.doc('orgs'), 'late-org')) !== null || (await call(gw, '/api/v1/admin/dev_keys', { headers: admin, body: { org_id: 'late-org' } })).status !== 400,
  },
  {
    family: 'admin dev key create',
    write: (gw) => call(gw, '/api/v1/admin/dev_keys', { headers: admin, body: { org_id: 'acme', dev_key_id: 'late-key' } }),
    landed: async (gw, redis, keys) =>
      Object.values(await redis.hgetall(keys.doc('dev_keys'))).some((d) => d.includes('"late-key"')) ||
      (await call(gw, '/api/v1/admin/dev_keys/revoke', { headers: admin, body: { dev_key_id: 'late-key' } })).status !== 404,
  },
  {
    family: 'admin dev key revoke',
    write: (gw) => call(gw, '/api/v1/admin/dev_keys/revoke', { headers: admin, body: { dev_key_id: 'dk-victim' } }),
    landed: async (gw, redis, keys) =>
      Object.values(await redis.hgetall(keys.doc('dev_keys'))).some((d) => d.includes('"dk-victim"') && !d.includes('"revoked_at":null')) ||
      (await call(gw, '/api/v1/settings', { key: VICTIM })).status !== 200,
  },
];

describe('a configuration write answered 504 store_timeout never lands afterwards', () => {
  let behind: Awaited<ReturnType<typeof startGatewayBehindProxy>>;
  let redis: Redis;
  let probes = 0;
  before(async () => {
    behind = await startGatewayBehindProxy(BOOT, { GW_BYOK_STORE_TIMEOUT_S: '1' });
    redis = new Redis(REDIS_URL);
  });
  after(async () => {
    redis.disconnect();
    await behind.close();
  });

  /**
   * A write through the same store connection as the held one, after it:
   * Redis runs one connection's commands in order, and the gateway returns
   * once the change came back on the channel, so when this answers the held
   * script has run (or been dropped) and any change it made is in the mirror.
   */
  const afterHeldWrite = async () => {
    const probe = await call(behind.gw, '/api/v1/admin/orgs', { headers: admin, body: { org_id: `probe-${++probes}` } });
    assert.equal(probe.status, 201);
  };

  for (const c of CASES) {
    it(`${c.family}: 504 store_timeout while the store is stalled; once it answers again, nothing changed`, async () => {
      await c.prepare?.(behind.gw);
      // TIME answers (the deadline is set on Redis's clock); the write script is held in transit and reaches Redis after the 504
      behind.proxy.hangOnCommand('eval', 'evalsha');
      const answer = await c.write(behind.gw);
      assert.equal(answer.status, 504);
      assert.equal(answer.headers.get('x-gw-error'), 'store_timeout');
      behind.proxy.resume();
      await afterHeldWrite();
      assert.equal(await c.landed(behind.gw, redis, redisKeys(behind.prefix)), false, 'a write answered 504 landed afterwards');
    });
  }
});
