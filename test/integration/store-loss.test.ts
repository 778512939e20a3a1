import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { redisKeys } from '../../src/stores/redis/prefixes.js';
import { call } from '../helpers/api.js';
import { ADMIN_KEY, SECRETS_KEY, devKeySecret, startTestGateway, type Bootstrap, type TestGateway } from '../helpers/gateway.js';
import { privateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { eventually } from '../helpers/wait.js';

const ACME = devKeySecret('loss-acme');
const BETA = devKeySecret('loss-beta');
const REVOKED = devKeySecret('loss-revoked');
const BOOT: Bootstrap = {
  orgs: [
    { org_id: 'acme', rps_cap: 100_000 },
    { org_id: 'beta', rps_cap: 100_000 },
  ],
  dev_keys: [
    { org_id: 'acme', dev_key_id: 'dk-acme', api_key: ACME },
    { org_id: 'beta', dev_key_id: 'dk-beta', api_key: BETA },
    { org_id: 'acme', dev_key_id: 'dk-revoked', api_key: REVOKED },
  ],
};
const admin = { 'x-gw-admin-key': ADMIN_KEY };
const PREFIX = 'gwtest:loss:';

/**
 * Two replicas over a Redis of the test's own, without persistence. State
 * made through the API (beyond GW_BOOTSTRAP: a revocation, a stored provider
 * key, a cap, an access list, an org and key made by the admin routes) must
 * outlive Redis losing everything, in both replicas and back in Redis.
 */
describe('Redis that loses its data is not the truth: the replicas keep serving and restore it', () => {
  let redis: PrivateRedis;
  let a: TestGateway;
  let b: TestGateway;
  let reader: Redis;
  let laterKey: string;
  const keys = redisKeys(PREFIX);

  before(async () => {
    redis = await privateRedis();
    const env = { GW_REDIS_URL: redis.url, GW_REDIS_PREFIX: PREFIX, GW_SECRETS_KEY: SECRETS_KEY, GW_WORKERS: '1' };
    a = await startTestGateway({ bootstrap: BOOT, env });
    b = await startTestGateway({ env });
    reader = new Redis(redis.url);
    reader.on('error', () => undefined); // refused while the server restarts
    assert.equal((await call(a, '/api/v1/admin/dev_keys/revoke', { headers: admin, body: { dev_key_id: 'dk-revoked' } })).status, 200);
    assert.equal((await call(a, '/api/v1/vendor_key/create', { key: ACME, body: { provider: 'openai', api_key: 'sk-kept-openai-1234' } })).status, 200);
    assert.equal((await call(b, '/api/v1/spend_cap/update', { key: ACME, body: { cap_usd: 12, period: 'day' } })).status, 200);
    assert.equal((await call(b, '/api/v1/model_access/update', { key: BETA, body: { models: ['gpt-4o'] } })).status, 200);
    assert.equal((await call(a, '/api/v1/admin/orgs', { headers: admin, body: { org_id: 'later', rps_cap: 100_000 } })).status, 201);
    const made = await call(a, '/api/v1/admin/dev_keys', { headers: admin, body: { org_id: 'later', dev_key_id: 'dk-later' } });
    assert.equal(made.status, 201);
    laterKey = String(made.json['api_key']);
  });
  after(async () => {
    reader.disconnect();
    await a.close();
    await b.close();
    await redis.stop();
  });

  /** everything made above, as each replica answers it */
  const assertServedAsBefore = async () => {
    for (const gw of [a, b]) {
      const acme = await call(gw, '/api/v1/settings', { key: ACME });
      assert.equal(acme.status, 200);
      assert.equal((acme.json['spend_cap'] as Record<string, unknown>)['cap_usd'], 12);
      assert.deepEqual(acme.json['vendor_keys'], [{ provider: 'openai', credential_kind: 'api_key', key_hint: '1234' }]);
      const beta = await call(gw, '/api/v1/settings', { key: BETA });
      assert.equal(beta.status, 200);
      assert.deepEqual(beta.json['model_access'], { models: ['gpt-4o'] });
      assert.equal((await call(gw, '/api/v1/settings', { key: laterKey })).status, 200, 'the org and key made by the admin routes');
      assert.equal((await call(gw, '/api/v1/settings', { key: REVOKED })).status, 401, 'a revoked key stays revoked');
    }
  };

  /** what Redis holds once a replica wrote its mirror back */
  const restoredInRedis = async () => {
    const revoked = Object.values(await reader.hgetall(keys.doc('dev_keys'))).find((d) => d.includes('"dk-revoked"'));
    return (
      (await reader.get(keys.docGeneration)) !== null &&
      revoked !== undefined &&
      !revoked.includes('"revoked_at":null') &&
      (await reader.hget(keys.doc('vendor_keys'), 'acme:openai')) !== null &&
      (await reader.hget(keys.doc('org_policy'), 'spend_cap:acme')) !== null &&
      (await reader.hget(keys.doc('org_policy'), 'model_access:beta')) !== null &&
      (await reader.hget(keys.doc('orgs'), 'later')) !== null
    );
  };

  /** restores written by either replica, one line each (the one that wrote its mirror back logs it) */
  const restoresLogged = () => [...a.logs, ...b.logs].filter((l) => l.includes("configuration store restored from this replica's mirror")).length;

  const lossMetric = async (gw: TestGateway) => Number(/^gw_store_data_loss_total (\d+)/m.exec(await gw.gateway.registry.metrics())?.[1] ?? 0);

  it('Redis killed and restarted empty: every tenant still served, the revoked key still 401, the data back in Redis', async () => {
    await assertServedAsBefore();
    await redis.stop();
    await redis.restart();
    await eventually(() => restoredInRedis().catch(() => false), 'the restore into the restarted Redis');
    // the spend cap's figures come from the metering connection, which reconnects on its own backoff; until it is
    // back a read answers 504 store_timeout by design (a bounded wait), so the check starts once it answers
    await eventually(async () => (await Promise.all([a, b].map((gw) => call(gw, '/api/v1/settings', { key: ACME })))).every((r) => r.status !== 504), 'the metering connections back');
    await assertServedAsBefore();
    assert.equal((await lossMetric(a)) + (await lossMetric(b)) >= 1, true, 'gw_store_data_loss_total counts the loss');
    assert.ok([...a.logs, ...b.logs].some((l) => l.includes('"level":50') && l.includes('Redis lost the configuration documents')), 'an error line says what happened');
    assert.equal(restoresLogged(), 1, 'one replica restored, the other followed');
  });

  it('FLUSHALL with no connection dropped: the same, and writes work again afterwards', async () => {
    await reader.flushall();
    await eventually(restoredInRedis, 'the restore after FLUSHALL');
    await assertServedAsBefore();
    assert.equal(restoresLogged(), 2, 'one restore for this loss too');
    assert.equal((await call(b, '/api/v1/spend_cap/update', { key: ACME, body: { cap_usd: 13 } })).status, 200);
    await eventually(async () => ((await call(a, '/api/v1/settings', { key: ACME })).json['spend_cap'] as Record<string, unknown>)['cap_usd'] === 13, 'a write after the restore reaches the other replica');
  });
});
