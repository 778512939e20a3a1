import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { armFor } from '../../src/skills/arms.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai.js';
import { call } from '../helpers/api.js';
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
  orgs: [{ org_id: 'acme' }],
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
    const chat = async (name: keyof typeof KEYS, session: string | undefined, model = 'gpt-4o', tools = false) => {
      const r = await call(gw, '/v1/chat/completions', {
        key: KEYS[name],
        headers: { 'x-gw-provider-key': 'sk-upstream', ...(session !== undefined && { 'x-gw-session': session }) },
        body: { model, messages: [{ role: 'user', content: 'weather in Paris?' }], ...(tools && { tools: [WEATHER_TOOL] }) },
      });
      assert.equal(r.status, 200);
      return r;
    };
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
