import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ScorecardRow } from '../../src/lifecycle/rows.js';
import type { RedisClient } from '../../src/stores/redis/client.js';
import { redisKeys } from '../../src/stores/redis/prefixes.js';
import { call, startReplicaPair, type ReplicaPair } from '../helpers/api.js';
import { CONFIG_SECRET, devKeySecret, startTestGateway, testRedis, type Bootstrap, type TestGateway } from '../helpers/gateway.js';
import { eventually } from '../helpers/wait.js';

/**
 * These tests feed chosen rows where every finished request's row goes (the
 * process window, or with Redis the durable samples store every replica
 * reads), to reach outcomes that need skill reports; scorecard-traffic.test.ts
 * drives scorecards by real requests.
 */

const ACME = devKeySecret('sc-acme');
const OTHER = devKeySecret('sc-other');
const BOOT: Bootstrap = {
  orgs: [{ org_id: 'acme' }, { org_id: 'other' }],
  dev_keys: [
    { org_id: 'acme', dev_key_id: 'dk-acme', api_key: ACME },
    { org_id: 'other', dev_key_id: 'dk-other', api_key: OTHER },
  ],
};
const FOLD = 'agent_trajectory_compaction';

let seq = 0;
function rowOf(keyId: string, skill: string, arm: string, over: Partial<ScorecardRow> & { outcome?: string; ageMs?: number } = {}): ScorecardRow {
  const { outcome, ageMs, ...rest } = over;
  return {
    request_id: `req-${seq++}`,
    ts: new Date(Date.now() - (ageMs ?? 0)).toISOString(),
    tenant_id: 'acme',
    key_id: keyId,
    session_id: null,
    task_id: null,
    status: 200,
    latency_ms: 120,
    overhead_ms: 0.5,
    cost_usd: 0.0001,
    tokens_in: 20,
    tokens_out: 10,
    tokens_saved: 0,
    retry: false,
    relay_reason: null,
    error_detail: null,
    tool_fidelity: null,
    skills: { [skill]: { arm, outcome: outcome ?? (arm === 'control' ? 'skipped' : 'applied') } },
    ...rest,
  };
}

const feedRows = (gw: TestGateway, rows: readonly ScorecardRow[]) => {
  for (const r of rows) gw.gateway.scorecardRows.record(r);
};

const keyIdOf = async (gw: TestGateway, key: string): Promise<string> => {
  const keys = (await call(gw, '/api/v1/settings', { key })).json['dev_keys'] as Array<Record<string, unknown>>;
  return String(keys[0]?.['key_id']);
};
/** `key` null: no developer key */
const scorecard = (gw: TestGateway, path: string, key: string | null = ACME, headers: Record<string, string> = {}) => call(gw, `/api/v1/tenant/${path}`, { key: key ?? undefined, headers });

describe('scorecard route (embedded store)', () => {
  let gw: TestGateway;
  let keyId: string;
  before(async () => {
    gw = await startTestGateway({ bootstrap: BOOT });
    keyId = await keyIdOf(gw, ACME);
  });
  after(() => gw.close());

  it('needs a credential entitled to the tenant: none is 401, another org key 403, the config secret naming it 200', async () => {
    assert.equal((await scorecard(gw, 'acme/skills/semantic_cache/scorecard', null)).status, 401);
    assert.equal((await scorecard(gw, 'acme/skills/semantic_cache/scorecard', OTHER)).status, 403);
    const secret = await scorecard(gw, 'acme/skills/semantic_cache/scorecard', null, { 'x-gw-config-secret': CONFIG_SECRET });
    assert.equal(secret.status, 200);
    assert.equal(secret.json['status'], 'NO_DATA');
  });

  it('refuses an unknown skill or window (400) and another tenant\'s key_id alike with an unknown one (404)', async () => {
    assert.equal((await scorecard(gw, 'acme/skills/guardrails/scorecard')).status, 400);
    assert.equal((await scorecard(gw, 'acme/skills/semantic_cache/scorecard?window=2h')).status, 400);
    const foreign = await scorecard(gw, 'acme/skills/semantic_cache/scorecard?key_id=dk-other');
    const unknown = await scorecard(gw, 'acme/skills/semantic_cache/scorecard?key_id=dk-nobody');
    assert.deepEqual([foreign.status, unknown.status], [404, 404]);
    assert.equal((await scorecard(gw, 'acme/skills/semantic_cache/scorecard?key_id=dk-acme')).status, 200);
  });

  it('counts only the window\'s rows, says the process window answered, and shows the transitions', async () => {
    const moved = await call(gw, '/api/v1/tenant/acme/skills/prompt_compaction/lifecycle', { key: ACME, body: { key_id: 'dk-acme', mode: 'prod' } });
    assert.equal(moved.status, 200);
    for (let i = 0; i < 25; i++) gw.gateway.scorecardRows.record(rowOf(keyId, 'prompt_compaction', 'treatment', { ageMs: 5 * 60_000 }));
    for (let i = 0; i < 10; i++) gw.gateway.scorecardRows.record(rowOf(keyId, 'prompt_compaction', 'treatment', { ageMs: 30 * 60_000 }));
    for (let i = 0; i < 10; i++) gw.gateway.scorecardRows.record(rowOf(keyId, 'prompt_compaction', 'treatment', { ageMs: 3 * 3_600_000 }));
    const sizes: Record<string, unknown> = {};
    for (const w of ['15m', '1h', '24h', '7d']) sizes[w] = ((await scorecard(gw, `acme/skills/prompt_compaction/scorecard?window=${w}`)).json['sample_size'] as Record<string, number>)['total'];
    assert.deepEqual(sizes, { '15m': 25, '1h': 35, '24h': 45, '7d': 45 });
    const card = (await scorecard(gw, 'acme/skills/prompt_compaction/scorecard?key_id=dk-acme')).json;
    assert.equal(card['status'], 'HEALTHY');
    assert.equal((card['source'] as Record<string, unknown>)['store'], 'process');
    const history = card['deployment_history'] as Array<Record<string, unknown>>;
    assert.deepEqual(history.map((t) => [t['id'], t['to_mode']]), [[(moved.json['transition'] as Record<string, unknown>)['id'], 'prod']]);
  });
});

for (const redis of [false, true]) {
  describe(`feedback (${redis ? 'redis' : 'embedded'} store)`, () => {
    let gw: TestGateway;
    let keyId: string;
    before(async () => {
      gw = await startTestGateway({ bootstrap: BOOT, redis });
      keyId = await keyIdOf(gw, ACME);
    });
    after(() => gw.close());

    it('needs a developer key and a session or task id', async () => {
      assert.equal((await call(gw, '/v1/feedback', { body: { session_id: 's', outcome: 'success' } })).status, 401);
      assert.equal((await call(gw, '/v1/feedback', { key: ACME, body: { outcome: 'success' } })).status, 400);
      assert.equal((await call(gw, '/v1/feedback', { key: ACME, body: { session_id: 's', outcome: 'great' } })).status, 400);
    });

    it('is idempotent per id, the last word counts, and feeds task success and goodput of the tenant only', async () => {
      const rows = (session: string, arm: string) => Array.from({ length: 4 }, () => rowOf(keyId, 'semantic_cache', arm, { session_id: session }));
      feedRows(gw, Array.from({ length: 6 }, (_, i) => [...rows(`t-${i}`, 'treatment'), ...rows(`c-${i}`, 'control')]).flat());
      for (let i = 0; i < 6; i++) {
        assert.equal((await call(gw, '/v1/feedback', { key: ACME, body: { session_id: `t-${i}`, outcome: 'success' } })).status, 200);
        assert.equal((await call(gw, '/v1/feedback', { key: ACME, body: { session_id: `t-${i}`, outcome: 'success' } })).status, 200);
        await call(gw, '/v1/feedback', { key: ACME, body: { session_id: `c-${i}`, outcome: 'success' } });
      }
      // the last word on t-0 and t-1 is failure; another tenant's word on t-2 changes nothing here
      await call(gw, '/v1/feedback', { key: ACME, body: { session_id: 't-0', outcome: 'failure' } });
      await call(gw, '/v1/feedback', { key: ACME, body: { session_id: 't-1', outcome: 'failure' } });
      await call(gw, '/v1/feedback', { key: OTHER, body: { session_id: 't-2', outcome: 'failure' } });
      const card = async () => (await scorecard(gw, 'acme/skills/semantic_cache/scorecard')).json;
      await eventually(async () => ((await card())['sample_size'] as Record<string, number>)['total'] === 48, 'the 48 rows in the scorecard');
      const d = (await card())['downstream_ai_metrics'] as Record<string, Record<string, unknown>>;
      assert.deepEqual(d['task_success_rate'], { treatment: 0.6667, control: 1 });
      assert.deepEqual(d['goodput'], { treatment: 0.6667, control: 1 });
      assert.deepEqual(d['tasks_with_feedback'], { treatment: 6, control: 6 });
    });
  });
}

describe('breaker sweep with two replicas on one Redis', () => {
  let pair: ReplicaPair;
  let redis: RedisClient;
  let keyId: string;
  before(async () => {
    pair = await startReplicaPair(BOOT, { GW_BREAKER_SWEEP_S: '1', GW_SKILL_AUTO_ROLLBACK: FOLD });
    redis = testRedis();
    keyId = await keyIdOf(pair.a, ACME);
  });
  after(async () => {
    redis.disconnect();
    await pair.close();
  });

  const modeOf = async (skill: string) => {
    const keys = (await call(pair.b, '/api/v1/settings', { key: ACME })).json['dev_keys'] as Array<{ skill_modes: Record<string, string> }>;
    return keys[0]?.skill_modes[skill];
  };

  it('rolls a tripped armed skill back once, with its breakers as trigger and anomalies as reason; rolled_back stays put', async () => {
    assert.equal((await call(pair.a, `/api/v1/tenant/acme/skills/${FOLD}/lifecycle`, { key: ACME, body: { key_id: 'dk-acme', mode: 'canary:50' } })).status, 200);
    // unarmed skill tripping the same way: advisory only, never rolled back
    assert.equal((await call(pair.a, '/api/v1/tenant/acme/skills/prompt_compaction/lifecycle', { key: ACME, body: { key_id: 'dk-acme', mode: 'prod' } })).status, 200);
    await eventually(async () => (await modeOf(FOLD)) === 'canary:50', 'the mode to reach the second replica');
    // failing requests in the durable rows both replicas read: whichever holds the lease judges the same
    const failing = Array.from({ length: 25 }, () => [
      rowOf(keyId, FOLD, 'treatment', { outcome: 'ceiling_exceeded', relay_reason: 'fail_open' }),
      rowOf(keyId, FOLD, 'control'),
      rowOf(keyId, 'prompt_compaction', 'treatment', { outcome: 'error' }),
    ]).flat();
    feedRows(pair.a, failing);
    await eventually(async () => (await modeOf(FOLD)) === 'rolled_back', 'the sweep to roll the key back');
    const list = async () => (await redis.lrange(redisKeys(pair.a.redisPrefix ?? '').transitions(keyId, FOLD), 0, -1)).map((t) => JSON.parse(t) as Record<string, string>);
    await eventually(async () => (await list()).length === 2, 'the rollback in the history');
    const [auto] = await list();
    assert.equal(auto?.['to_mode'], 'rolled_back');
    assert.equal(auto?.['from_mode'], 'canary:50');
    assert.equal(auto?.['trigger_source'], 'auto:fail_open_rate');
    assert.match(auto?.['reason'] ?? '', /^fail_open_rate 50\.0% > 1\.0%$/);

    // later sweeps (both replicas keep ticking) neither write again nor promote out of rolled_back
    const runsBefore = await pair.a.gateway.registry.getSingleMetricAsString('gw_breaker_sweep_runs_total');
    await eventually(async () => (await pair.a.gateway.registry.getSingleMetricAsString('gw_breaker_sweep_runs_total')) !== runsBefore, 'another sweep period');
    const b = (await pair.b.gateway.registry.getSingleMetricAsString('gw_breaker_sweep_runs_total'));
    await eventually(async () => (await pair.b.gateway.registry.getSingleMetricAsString('gw_breaker_sweep_runs_total')) !== b, 'another sweep period on the other replica');
    assert.equal(await modeOf(FOLD), 'rolled_back');
    assert.equal((await list()).length, 2, 'exactly one automatic transition');
    assert.equal(await modeOf('prompt_compaction'), 'prod', 'an unarmed skill is only advised about');
    const advisory = (await scorecard(pair.a, 'acme/skills/prompt_compaction/scorecard')).json;
    assert.equal(advisory['status'], 'BREAKER_ADVISORY');
    const card = (await scorecard(pair.a, `acme/skills/${FOLD}/scorecard?key_id=dk-acme`)).json;
    assert.equal(card['status'], 'CIRCUIT_BREAKER_TRIGGERED', 'the window still holds the failing samples');
    assert.equal((card['deployment_history'] as unknown[]).length, 2);
  });
});
