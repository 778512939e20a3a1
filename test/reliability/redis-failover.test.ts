import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { clusterTarget, redisClient, type RedisClient } from '../../src/stores/redis/client.js';
import { redisKeys } from '../../src/stores/redis/prefixes.js';
import { telemetryKeys } from '../../src/telemetry/keys.js';
import { decodeEntry } from '../../src/telemetry/stream-codec.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai.js';
import { call, type Answer } from '../helpers/api.js';
import { ADMIN_KEY, devKeySecret, newRedisPrefix, startTestGateway, UNLIMITED_RPS, type Bootstrap, type TestGateway } from '../helpers/gateway.js';
import { startRedisCluster, type ClusterNode, type TestRedisCluster } from '../helpers/redis-cluster.js';
import { eventually } from '../helpers/wait.js';

/**
 * A master of a real Redis Cluster (3 masters, 3 replicas) is killed with
 * SIGKILL while two gateway replicas relay calls for four tenants and an
 * operator keeps creating orgs. The master killed is the one holding the
 * configuration documents' slot, and two of the tenants (one of them capped)
 * have their metering and telemetry keys on it too. What docs/operations.md
 * (Redis Cluster, When a master fails) promises is checked: its replica is
 * promoted; no relayed call fails and no tenant is refused; configuration
 * writes fail only as 504 store_timeout, only between the kill and the
 * first write after the promotion, and every write answered 2xx is kept
 * and in both mirrors; the capped tenant spends no more than its cap plus
 * the calls relayed unmetered; every row of an answered call is in the
 * durable telemetry. The disruption is reported, not asserted.
 */

/** calls each loop makes before the kill, and after the write path is back, so both sides of the failover are under load */
const CALLS_AROUND = 15;
/** sequential calls per tenant loop: at most this many settlements can be in flight when the master dies */
const IN_FLIGHT_PER_TENANT = 1;

interface Outcome {
  status: number;
  type: string | undefined;
  /** when the answer came back (performance.now()) */
  at: number;
  /** how long it took */
  ms: number;
}

const errorType = (a: Answer): string | undefined => (a.json['error'] as { type?: string } | undefined)?.type;
const metric = (text: string, name: string): number =>
  text
    .split('\n')
    .filter((l) => l.startsWith(name))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);

describe('Redis Cluster: a master killed under load', () => {
  let cluster: TestRedisCluster;
  let admin: RedisClient;
  let fake: FakeOpenAI;
  const replicas: TestGateway[] = [];
  const prefix = newRedisPrefix();
  const keys = redisKeys(prefix);

  before(async () => {
    cluster = await startRedisCluster();
    admin = redisClient(clusterTarget(cluster.seeds), {});
    admin.on('error', () => undefined);
    fake = await startFakeOpenAI();
  });
  after(async () => {
    for (const gw of replicas) await gw.close();
    admin.disconnect();
    await fake.close();
    await cluster.stop();
  });

  /** Tenant ids whose keys (metering `{org:month}`, telemetry `{org}`) all live on `node`, or all elsewhere. */
  async function tenantsOn(node: ClusterNode, wanted: 'on' | 'off', n: number): Promise<string[]> {
    const found: string[] = [];
    for (let i = 0; found.length < n; i++) {
      const id = `fo-${wanted}-${i}`;
      const masters = await Promise.all([keys.meterSpend(`${id}:month`), telemetryKeys(prefix, id).rows].map((k) => cluster.masterOf(k)));
      if (masters.every((m) => (m.port === node.port) === (wanted === 'on'))) found.push(id);
    }
    return found;
  }

  // bounded: one run under heavy load from other work sat idle for 23 minutes before its kill (not reproduced); a failure names this test instead
  it('the replica is promoted; relays all answer, writes fail only as 504 during the failover and none answered 2xx is lost, the cap holds its bound, no answered row is missing', { timeout: 5 * 60_000 }, async () => {
    const target = await cluster.masterOf(keys.docGeneration);
    const tenants = [...(await tenantsOn(target, 'on', 2)), ...(await tenantsOn(target, 'off', 2))];
    const capped = tenants[0] as string;
    const keyOf = (org: string) => devKeySecret(`failover-${org}`);
    const bootstrap: Bootstrap = {
      orgs: tenants.map((org_id) => ({ org_id, rps_cap: UNLIMITED_RPS })),
      dev_keys: tenants.map((org_id) => ({ org_id, dev_key_id: `dk-${org_id}`, api_key: keyOf(org_id) })),
    };
    const env = { GW_REDIS_CLUSTER: cluster.seeds, GW_UPSTREAM_OPENAI: fake.origin };
    replicas.push(await startTestGateway({ redisPrefix: prefix, bootstrap, env }), await startTestGateway({ redisPrefix: prefix, env }));
    const [a, b] = replicas as [TestGateway, TestGateway];

    const relay = (gw: TestGateway, org: string) =>
      call(gw, '/v1/chat/completions', {
        key: keyOf(org),
        headers: { 'x-gw-provider-key': 'sk-upstream', 'x-request-id': `req-${randomUUID()}` },
        body: { model: 'gpt-4o', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
      });
    // one call's real cost (the fake's usage at catalog prices), from the settled consumption
    assert.equal((await call(a, '/api/v1/spend_cap/update', { key: keyOf(capped), body: { cap_usd: 1 } })).status, 200);
    assert.equal((await relay(a, capped)).status, 200);
    const consumed = async () => ((await call(a, '/api/v1/settings', { key: keyOf(capped) })).json['spend_cap'] as { consumed_usd: number }).consumed_usd;
    await eventually(async () => (await consumed()) > 0, 'the first call settled');
    const perCall = await consumed();
    const cap = 40 * perCall;
    assert.equal((await call(b, '/api/v1/spend_cap/update', { key: keyOf(capped), body: { cap_usd: cap } })).status, 200);
    const cappedBefore = 1;

    let stop = false;
    let killedAt = Infinity;
    const relays = new Map<string, Outcome[]>(tenants.map((t) => [t, []]));
    const answered = new Map<string, string[]>(tenants.map((t) => [t, []]));
    const writes: Array<Outcome & { org: string }> = [];
    const relayLoop = async (org: string) => {
      for (let i = 0; !stop; i++) {
        const sent = performance.now();
        const res = await relay(i % 2 === 0 ? a : b, org);
        relays.get(org)?.push({ status: res.status, type: errorType(res), at: performance.now(), ms: performance.now() - sent });
        if (res.status === 200) answered.get(org)?.push(res.headers.get('x-gw-request-id') as string);
      }
    };
    const writeLoop = async () => {
      for (let i = 0; !stop; i++) {
        const org = `fo-written-${i}`;
        const sent = performance.now();
        const res = await call(i % 2 === 0 ? a : b, '/api/v1/admin/orgs', { key: ADMIN_KEY, body: { org_id: org } });
        writes.push({ org, status: res.status, type: errorType(res), at: performance.now(), ms: performance.now() - sent });
      }
    };
    const loops = [...tenants.map(relayLoop), writeLoop()];
    const around = (n: number, since: number) => [...relays.values()].every((o) => o.filter((x) => x.at > since).length >= n) && writes.filter((w) => w.at > since).length >= n;

    await eventually(() => around(CALLS_AROUND, 0), 'load before the kill', 60_000);
    killedAt = performance.now();
    await cluster.kill(target);
    const promoted = await cluster.promoted(keys.docGeneration, target);
    const promotedAt = performance.now();
    // the write path is back once a write started after the promotion is answered 2xx
    await eventually(() => writes.some((w) => w.at > promotedAt && w.status < 300), 'a configuration write after the promotion', 60_000);
    const backAt = (writes.find((w) => w.at > promotedAt && w.status < 300) as Outcome).at;
    await eventually(() => around(CALLS_AROUND, backAt), 'load after the failover', 60_000);
    stop = true;
    await Promise.all(loops);

    assert.notEqual(promoted.port, target.port);
    // relays: every call answered; the capped tenant is refused only by its cap (402 budget_exhausted)
    for (const [org, outcomes] of relays) {
      const bad = outcomes.filter((o) => o.status !== 200 && !(org === capped && o.status === 402 && o.type === 'budget_exhausted'));
      assert.deepEqual(bad, [], `${org}: relays that failed`);
    }
    // configuration writes: 504 store_timeout only, and only inside the failover
    const failed = writes.filter((w) => w.status >= 300);
    for (const w of failed) {
      assert.deepEqual([w.status, w.type], [504, 'store_timeout'], `${w.org}`);
      assert.ok(w.at > killedAt && w.at < backAt, `${w.org} failed outside the failover`);
    }
    // every write answered 2xx is in Redis (on the promoted replica) and in both mirrors
    const kept = writes.filter((w) => w.status < 300).map((w) => w.org);
    const inRedis = await admin.hgetall(keys.doc('orgs'));
    assert.deepEqual(kept.filter((org) => !(org in inRedis)), [], 'acknowledged writes lost by the failover');
    for (const gw of [a, b]) {
      await eventually(async () => {
        const listed = new Set(((await call(gw, '/api/v1/admin/orgs', { key: ADMIN_KEY })).json['data'] as Array<{ org_id: string }>).map((o) => o.org_id));
        return kept.every((org) => listed.has(org));
      }, `every acknowledged org in ${gw.url}'s mirror`);
    }
    // the cap: what was admitted is at most the cap, plus what was relayed unmetered or settled with the lost master
    const texts = await Promise.all([a, b].map(async (gw) => (await fetch(`${gw.url}/metrics`)).text()));
    const unmetered = texts.reduce((n, t) => n + metric(t, 'gw_spend_cap_store_failures_total{op="reserve') + metric(t, 'gw_spend_cap_store_failures_total{op="settle"'), 0);
    const admitted = cappedBefore + (relays.get(capped) ?? []).filter((o) => o.status === 200).length;
    const bound = Math.floor(cap / perCall + 1e-9) + unmetered + IN_FLIGHT_PER_TENANT;
    assert.ok(admitted <= bound, `capped tenant: ${admitted} calls admitted, bound ${bound} (${unmetered} relayed unmetered)`);
    // telemetry: every answered call's row is in the durable streams (the writers retry until a replica has it), none dropped
    const missing = async () => {
      const out: string[] = [];
      for (const [org, ids] of answered) {
        const stored = new Set((await admin.xrange(telemetryKeys(prefix, org).rows, '-', '+')).map(([, fields]) => decodeEntry(fields, false)?.row.request_id));
        out.push(...ids.filter((id) => !stored.has(id)).map((id) => `${org}/${id}`));
      }
      return out;
    };
    await eventually(async () => (await missing()).length === 0, 'every answered call in the durable telemetry', 30_000).catch(async (err: Error) => {
      const lost = await missing();
      assert.fail(`${err.message}: ${lost.length} of ${[...answered.values()].flat().length} rows missing (${lost.slice(0, 5).join(' ')})`);
    });
    assert.equal(texts.reduce((n, t) => n + metric(t, 'gw_telemetry_rows_dropped_total'), 0), 0);

    const all = [...relays.values()].flat();
    const slowest = (o: Outcome[]) => Math.max(...o.filter((x) => x.at > killedAt && x.at - x.ms < backAt).map((x) => x.ms)).toFixed(0);
    process.stdout.write(
      `failover: master ${target.port} killed, ${promoted.port} promoted after ${(promotedAt - killedAt).toFixed(0)} ms; ` +
        `configuration writes back ${(backAt - killedAt).toFixed(0)} ms after the kill (${failed.length} of ${writes.length} answered 504, slowest ${slowest(writes)} ms); ` +
        `${all.length} relays, none failed (slowest during the failover ${slowest(all)} ms); capped tenant ${admitted} admitted (bound ${bound}, ${unmetered} unmetered)\n`,
    );
  });
});
