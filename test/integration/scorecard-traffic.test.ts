import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { armFor } from '../../src/skills/arms.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai.js';
import { call, startReplicaPairOverFakeOpenAI, type ReplicaPairOverFake } from '../helpers/api.js';
import { devKeySecret, startTestGateway, type Bootstrap, type TestGateway } from '../helpers/gateway.js';
import { eventually } from '../helpers/wait.js';

/**
 * Scorecards from real traffic: requests through the gateway to a fake
 * OpenAI, each finished request becoming the row the scorecard reads (the
 * process window without Redis, the durable rows with it). No skill engine
 * runs: a row's arm is drawn from its key's stored mode, as the engine draws it.
 */

const KEYS = { quiet: devKeySecret('sct-quiet'), healthy: devKeySecret('sct-healthy'), tools: devKeySecret('sct-tools') };
const BOOT: Bootstrap = {
  orgs: [{ org_id: 'acme', rps_cap: 100_000 }],
  dev_keys: Object.entries(KEYS).map(([name, api_key]) => ({ org_id: 'acme', dev_key_id: `dk-${name}`, api_key })),
};
const WEATHER_TOOL = {
  type: 'function',
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

/** session ids whose canary arm for `skill` is `arm`, `n` of them (drawn as the engine draws) */
function sessionsIn(skill: string, percent: number, arm: 'treatment' | 'control', n: number, tag: string): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n; i++) if (armFor(skill, `canary:${percent}`, `${tag}-${i}`, 'unused') === arm) out.push(`${tag}-${i}`);
  return out;
}

type Caller = { gw: TestGateway; key: string };
const chatAs = async ({ gw, key }: Caller, session: string | undefined, model = 'gpt-4o', tools = false) => {
  const r = await call(gw, '/v1/chat/completions', {
    key,
    headers: { 'x-gw-provider-key': 'sk-upstream', ...(session !== undefined && { 'x-gw-session': session }) },
    body: { model, messages: [{ role: 'user', content: `weather in Paris? (${session ?? 'no session'})` }], ...(tools && { tools: [WEATHER_TOOL] }) },
  });
  assert.equal(r.status, 200);
};

for (const redis of [false, true]) {
  describe(`scorecard from real traffic (${redis ? 'durable rows' : 'process window'})`, () => {
    let fake: FakeOpenAI;
    let gw: TestGateway;
    before(async () => {
      fake = await startFakeOpenAI();
      gw = await startTestGateway({ bootstrap: BOOT, redis, env: { GW_UPSTREAM_OPENAI: fake.origin } });
    });
    after(async () => {
      await gw.close();
      await fake.close();
    });

    const setMode = async (name: keyof typeof KEYS, skill: string, mode: string) =>
      assert.equal((await call(gw, `/api/v1/tenant/acme/skills/${skill}/lifecycle`, { key: KEYS[name], body: { key_id: `dk-${name}`, mode } })).status, 200);
    const chat = (name: keyof typeof KEYS, session: string | undefined, model?: string, tools?: boolean) => chatAs({ gw, key: KEYS[name] }, session, model, tools);
    const card = async (name: keyof typeof KEYS, skill: string) => (await call(gw, `/api/v1/tenant/acme/skills/${skill}/scorecard?key_id=dk-${name}`, { key: KEYS[name] })).json;
    const armSizes = (c: Record<string, unknown>) => c['sample_size'] as Record<string, number>;

    it('says NO_DATA under 20 samples, from its store', async () => {
      await setMode('quiet', 'prompt_compaction', 'canary:50');
      for (let i = 0; i < 12; i++) await chat('quiet', `q-${i}`);
      await eventually(async () => armSizes(await card('quiet', 'prompt_compaction'))['total'] === 12, 'the 12 rows in the scorecard');
      const c = await card('quiet', 'prompt_compaction');
      assert.equal(c['status'], 'NO_DATA');
      assert.equal((c['source'] as Record<string, unknown>)['store'], redis ? 'durable' : 'process');
    });

    it('is HEALTHY with 20+ well-formed replies per arm, split as the arms were drawn', async () => {
      await setMode('healthy', 'prompt_compaction', 'canary:50');
      const treated = sessionsIn('prompt_compaction', 50, 'treatment', 22, 'h');
      const control = sessionsIn('prompt_compaction', 50, 'control', 21, 'h');
      for (const s of [...treated, ...control]) await chat('healthy', s, 'gpt-4o-good_tools', true);
      await eventually(async () => armSizes(await card('healthy', 'prompt_compaction'))['total'] === 43, 'the 43 rows in the scorecard');
      const c = await card('healthy', 'prompt_compaction');
      assert.deepEqual([armSizes(c)['treatment'], armSizes(c)['control']], [22, 21]);
      assert.equal(c['status'], 'HEALTHY', JSON.stringify(c['anomalies']));
      assert.deepEqual((c['downstream_ai_metrics'] as Record<string, unknown>)['tool_call_fidelity'], { treatment: 1, control: 1 });
      // distinct bodies: no request counts as the client's retry of another
      assert.deepEqual((c['generic_metrics'] as Record<string, unknown>)['client_retry_rate'], { treatment: 0, control: 0 });
    });

    it('trips tool-call fidelity when treatment replies call tools against their declared schema (advisory: not armed)', async () => {
      await setMode('tools', 'model_routing', 'canary:50');
      for (const s of sessionsIn('model_routing', 50, 'treatment', 20, 't')) await chat('tools', s, 'gpt-4o-bad_tools', true);
      for (const s of sessionsIn('model_routing', 50, 'control', 20, 't')) await chat('tools', s, 'gpt-4o-good_tools', true);
      await eventually(async () => armSizes(await card('tools', 'model_routing'))['total'] === 40, 'the 40 rows in the scorecard');
      const c = await card('tools', 'model_routing');
      assert.equal(c['status'], 'BREAKER_ADVISORY');
      assert.deepEqual(c['breakers'], ['tool_call_fidelity']);
      assert.deepEqual((c['downstream_ai_metrics'] as Record<string, unknown>)['tool_call_fidelity'], { treatment: 0, control: 1 });
    });
  });
}

describe('the breaker sweep over durable rows of real traffic, two replicas on one Redis', () => {
  const FOLD = 'agent_trajectory_compaction';
  let pair: ReplicaPairOverFake;
  before(async () => {
    pair = await startReplicaPairOverFakeOpenAI(BOOT, { GW_BREAKER_SWEEP_S: '1', GW_SKILL_AUTO_ROLLBACK: FOLD });
  });
  after(() => pair.close());

  const modeOn = async (gw: TestGateway) => {
    const keys = (await call(gw, '/api/v1/settings', { key: KEYS.tools })).json['dev_keys'] as Array<{ dev_key_id: string; skill_modes: Record<string, string> }>;
    return keys.find((k) => k.dev_key_id === 'dk-tools')?.skill_modes[FOLD];
  };
  const history = async (gw: TestGateway) =>
    (await call(gw, `/api/v1/tenant/acme/skills/${FOLD}/scorecard?key_id=dk-tools`, { key: KEYS.tools })).json['deployment_history'] as Array<Record<string, string>>;

  it('rolls an armed skill back once when the treatment both replicas served breaks its tool schemas (neither replica alone has 20 samples)', async () => {
    assert.equal((await call(pair.a, `/api/v1/tenant/acme/skills/${FOLD}/lifecycle`, { key: KEYS.tools, body: { key_id: 'dk-tools', mode: 'canary:50' } })).status, 200);
    await eventually(async () => (await modeOn(pair.b)) === 'canary:50', 'the mode to reach the second replica');
    const treated = sessionsIn(FOLD, 50, 'treatment', 20, 'sw');
    for (const [i, s] of treated.entries()) await chatAs({ gw: i % 2 === 0 ? pair.a : pair.b, key: KEYS.tools }, s, 'gpt-4o-bad_tools', true);
    await eventually(async () => (await modeOn(pair.a)) === 'rolled_back' && (await modeOn(pair.b)) === 'rolled_back', 'the sweep to roll the key back');
    await eventually(async () => (await history(pair.b)).length === 2, 'the rollback in the history');
    const [auto] = await history(pair.b);
    assert.deepEqual([auto?.['from_mode'], auto?.['to_mode'], auto?.['trigger_source']], ['canary:50', 'rolled_back', 'auto:tool_call_fidelity']);

    // further sweeps on both replicas write nothing more
    const runs = async (gw: TestGateway) => gw.gateway.registry.getSingleMetricAsString('gw_breaker_sweep_runs_total');
    const [ra, rb] = [await runs(pair.a), await runs(pair.b)];
    await eventually(async () => (await runs(pair.a)) !== ra && (await runs(pair.b)) !== rb, 'another sweep period on each replica');
    assert.equal((await history(pair.a)).length, 2, 'exactly one automatic transition');
    assert.equal(await modeOn(pair.b), 'rolled_back');
  });
});
