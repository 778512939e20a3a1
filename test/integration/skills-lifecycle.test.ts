import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call, errorMessage as message, startReplicaPair, type ReplicaPair } from '../helpers/api.js';
import { Redis } from 'ioredis';
import { redisKeys } from '../../src/stores/redis/prefixes.js';
import { ADMIN_KEY, CONFIG_SECRET, devKeySecret, REDIS_URL, startTestGateway, type Bootstrap, type TestGateway } from '../helpers/gateway.js';
import { startGatewayBehindProxy } from '../helpers/redis-proxy.js';

const ENT = devKeySecret('sk-ent');
const ENT2 = devKeySecret('sk-ent-2');
const SUB = devKeySecret('sk-sub');
const TEAM = devKeySecret('sk-team');
const BOOT: Bootstrap = {
  orgs: [{ org_id: 'ent', plan: 'enterprise' }, { org_id: 'ent-sub', parent_org_id: 'ent', plan: 'team' }, { org_id: 'team' }],
  dev_keys: [
    { org_id: 'ent', dev_key_id: 'dk-ent', api_key: ENT },
    { org_id: 'ent', dev_key_id: 'dk-ent-2', api_key: ENT2 },
    { org_id: 'ent-sub', dev_key_id: 'dk-sub', api_key: SUB },
    { org_id: 'team', dev_key_id: 'dk-team', api_key: TEAM },
  ],
};
const lifecycle = (gw: TestGateway, org: string, skill: string, body: Record<string, unknown>, key = ENT, headers: Record<string, string> = {}) =>
  call(gw, `/api/v1/tenant/${org}/skills/${skill}/lifecycle`, { key, body, headers });
const skillsOf = async (gw: TestGateway, key: string, devKeyId: string) => {
  const keys = (await call(gw, '/api/v1/settings', { key })).json['dev_keys'] as Array<Record<string, unknown>>;
  return keys.find((k) => k['dev_key_id'] === devKeyId);
};

for (const redis of [false, true]) {
  describe(`per-key skills and lifecycle (${redis ? 'redis' : 'embedded'} store)`, () => {
    let gw: TestGateway;
    before(async () => (gw = await startTestGateway({ redis, bootstrap: BOOT })));
    after(() => gw.close());

    it('merges flags and modes: setting one does not clear the others', async () => {
      const first = await call(gw, '/api/v1/dev_key/skills', { key: ENT, body: { dev_key_id: 'dk-ent', skills: { pii_redaction: true }, skill_modes: { semantic_cache: 'shadow' } } });
      assert.equal(first.status, 200);
      const second = await call(gw, '/api/v1/dev_key/skills', { key: ENT, body: { dev_key_id: 'dk-ent', skills: { model_routing: false }, skill_modes: { prompt_compaction: 'canary' } } });
      assert.equal(second.json['status'], 'success');
      assert.equal(second.json['dev_key_id'], 'dk-ent');
      assert.deepEqual(second.json['skills'], { pii_redaction: true, model_routing: false });
      assert.deepEqual(second.json['skill_modes'], { semantic_cache: 'shadow', prompt_compaction: 'canary:10' });
      const stored = await skillsOf(gw, ENT, 'dk-ent');
      assert.deepEqual(stored?.['skill_modes'], { semantic_cache: 'shadow', prompt_compaction: 'canary:10' });
    });

    it('without dev_key_id an org key configures itself', async () => {
      const r = await call(gw, '/api/v1/dev_key/skills', { key: ENT2, body: { skills: { semantic_cache: true } } });
      assert.equal(r.json['dev_key_id'], 'dk-ent-2');
    });

    it('a lock must accompany or follow a stored mode', async () => {
      const alone = await call(gw, '/api/v1/dev_key/skills', { key: ENT, body: { dev_key_id: 'dk-ent', locked_skills: { model_routing: true } } });
      assert.equal(alone.status, 400);
      assert.match(message(alone), /locked_skills\.model_routing/);
      const follows = await call(gw, '/api/v1/dev_key/skills', { key: ENT, body: { dev_key_id: 'dk-ent', locked_skills: { semantic_cache: true } } });
      assert.deepEqual(follows.json['locked_skills'], { semantic_cache: true });
      const accompanies = await call(gw, '/api/v1/dev_key/skills', { key: ENT, body: { dev_key_id: 'dk-ent', skill_modes: { model_routing: 'prod' }, locked_skills: { model_routing: true } } });
      assert.deepEqual(accompanies.json['locked_skills'], { semantic_cache: true, model_routing: true });
    });

    it('skill_params is Enterprise-only: on another plan the whole save is 403 naming it', async () => {
      const params = { agent_trajectory_compaction: { min_fold_tokens: 2000, keep_recent_turns: 4, max_fold_ratio: 0.5 } };
      const ok = await call(gw, '/api/v1/dev_key/skills', { key: ENT, body: { dev_key_id: 'dk-ent', skill_params: params } });
      assert.deepEqual(ok.json['skill_params'], params);
      const refused = await call(gw, '/api/v1/dev_key/skills', { key: TEAM, body: { dev_key_id: 'dk-team', skills: { pii_redaction: true }, skill_params: params } });
      assert.equal(refused.status, 403);
      assert.match(message(refused), /skill_params/);
      assert.deepEqual((await skillsOf(gw, TEAM, 'dk-team'))?.['skills'], {}, 'nothing of the save was kept');
      const unknownField = await call(gw, '/api/v1/dev_key/skills', { key: ENT, body: { dev_key_id: 'dk-ent', skill_params: { agent_trajectory_compaction: { fold_everything: 1 } } } });
      assert.equal(unknownField.status, 400);
      assert.match(message(unknownField), /fold_everything/);
      const otherSkill = await call(gw, '/api/v1/dev_key/skills', { key: ENT, body: { dev_key_id: 'dk-ent', skill_params: { pii_redaction: { x: 1 } } } });
      assert.equal(otherSkill.status, 400);
    });

    it('refuses unknown skills and modes outside the vocabulary', async () => {
      const skill = await call(gw, '/api/v1/dev_key/skills', { key: ENT, body: { dev_key_id: 'dk-ent', skills: { guardrails: true } } });
      assert.equal(skill.status, 400);
      assert.match(message(skill), /guardrails/);
      const mode = await call(gw, '/api/v1/dev_key/skills', { key: ENT, body: { dev_key_id: 'dk-ent', skill_modes: { pii_redaction: 'canary:100' } } });
      assert.equal(mode.status, 400);
      assert.match(message(mode), /canary:N/);
    });

    it('lifecycle: moves the mode, records the transition and answers {status, stored_under, skill_modes, transition}', async () => {
      const r = await lifecycle(gw, 'ent', 'pii_redaction', { key_id: 'dk-ent', mode: 'canary:25', reason: 'ramp' });
      assert.equal(r.status, 200);
      const settings = await skillsOf(gw, ENT, 'dk-ent');
      assert.equal(r.json['status'], 'success');
      assert.equal(r.json['stored_under'], settings?.['key_id']);
      assert.equal((r.json['skill_modes'] as Record<string, string>)['pii_redaction'], 'canary:25');
      const t = r.json['transition'] as Record<string, unknown>;
      assert.match(String(t['id']), /^tr_/);
      assert.ok(!Number.isNaN(Date.parse(String(t['timestamp']))));
      assert.deepEqual(
        { ...t, id: undefined, timestamp: undefined },
        { id: undefined, timestamp: undefined, org_id: 'ent', key_id: settings?.['key_id'], skill_id: 'pii_redaction', from_mode: 'off', to_mode: 'canary:25', canary_percent: 25, trigger_source: 'user:api', reason: 'ramp' },
      );
      assert.equal((settings?.['skill_modes'] as Record<string, string>)['pii_redaction'], 'canary:25', 'the dev_key/skills store holds it');

      const next = await lifecycle(gw, 'ent', 'pii_redaction', { key_id: String(settings?.['key_id']), mode: 'canary', trigger_source: 'ops:runbook' });
      const t2 = next.json['transition'] as Record<string, unknown>;
      assert.equal(t2['from_mode'], 'canary:25');
      assert.equal(t2['to_mode'], 'canary:10');
      assert.equal(t2['canary_percent'], 10);
      assert.equal(t2['trigger_source'], 'ops:runbook');
      const back = await lifecycle(gw, 'ent', 'pii_redaction', { key_id: 'dk-ent', mode: 'rolled_back' });
      assert.equal((back.json['transition'] as Record<string, unknown>)['canary_percent'], null);
    });

    it('lifecycle: 400 naming the vocabulary for a bad mode, 400 for a skill that is not per-key', async () => {
      for (const mode of ['canary:0', 'canary:100', 'canary:5.5', 'on', 7, null]) {
        const r = await lifecycle(gw, 'ent', 'pii_redaction', { key_id: 'dk-ent', mode });
        assert.equal(r.status, 400, String(mode));
        assert.match(message(r), /off, shadow, canary:N \(N an integer 1 to 99\), canary \(= canary:10\), prod, rolled_back/);
      }
      const skill = await lifecycle(gw, 'ent', 'guardrails', { key_id: 'dk-ent', mode: 'prod' });
      assert.equal(skill.status, 400);
      assert.match(message(skill), /not a per-key skill/);
      assert.equal((await lifecycle(gw, 'ent', 'pii_redaction', { mode: 'prod' })).status, 400, 'key_id is required');
    });

    it('lifecycle: a sub-tenant’s key is in the org; another org’s key and an unknown one are the same 404', async () => {
      assert.equal((await lifecycle(gw, 'ent', 'semantic_cache', { key_id: 'dk-sub', mode: 'shadow' })).status, 200);
      const foreign = await lifecycle(gw, 'ent', 'semantic_cache', { key_id: 'dk-team', mode: 'shadow' });
      const unknown = await lifecycle(gw, 'ent', 'semantic_cache', { key_id: 'dk-nobody', mode: 'shadow' });
      assert.equal(foreign.status, 404);
      assert.equal(unknown.status, 404);
      assert.equal(message(foreign).replace('dk-team', 'ID'), message(unknown).replace('dk-nobody', 'ID'));
      assert.equal(foreign.headers.get('x-gw-error'), unknown.headers.get('x-gw-error'));
      assert.equal((await lifecycle(gw, 'ent-sub', 'semantic_cache', { key_id: 'dk-ent', mode: 'shadow' }, SUB)).status, 404, 'a parent’s key is not in the sub-tenant');
    });

    it('authorization: org key for its own tenant only (403), no key 401, config secret or admin key naming the tenant', async () => {
      const foreign = await lifecycle(gw, 'team', 'semantic_cache', { key_id: 'dk-team', mode: 'shadow' }, ENT);
      assert.equal(foreign.status, 403);
      assert.equal(foreign.headers.get('x-gw-error'), 'forbidden');
      const bodyNamesOther = await lifecycle(gw, 'ent', 'semantic_cache', { key_id: 'dk-ent', mode: 'shadow', tenant_id: 'team' }, ENT);
      assert.equal(bodyNamesOther.status, 403);
      const none = await call(gw, '/api/v1/tenant/ent/skills/semantic_cache/lifecycle', { body: { key_id: 'dk-ent', mode: 'shadow' } });
      assert.equal(none.status, 401);
      assert.equal(none.headers.get('x-gw-error'), 'invalid_developer_key');
      assert.equal((await lifecycle(gw, 'team', 'semantic_cache', { key_id: 'dk-team', mode: 'prod' }, CONFIG_SECRET)).status, 200);
      assert.equal((await call(gw, '/api/v1/tenant/team/skills/semantic_cache/lifecycle', { headers: { 'x-gw-config-secret': CONFIG_SECRET }, body: { key_id: 'dk-team', mode: 'off' } })).status, 200);
      assert.equal((await call(gw, '/api/v1/tenant/team/skills/semantic_cache/lifecycle', { headers: { 'x-gw-admin-key': ADMIN_KEY }, body: { key_id: 'dk-team', mode: 'shadow' } })).status, 200);
      assert.equal((await call(gw, '/api/v1/tenant/team/skills/semantic_cache/lifecycle', { headers: { 'x-gw-config-secret': 'wrong-secret-0123456789' }, body: { key_id: 'dk-team', mode: 'off' } })).status, 401);
      const secretForeignKey = await lifecycle(gw, 'team', 'semantic_cache', { key_id: 'dk-ent', mode: 'prod' }, CONFIG_SECRET);
      assert.equal(secretForeignKey.status, 404, 'the key must still belong to the tenant named');
      const unnamed = await call(gw, '/api/v1/dev_key/skills', { key: CONFIG_SECRET, body: { dev_key_id: 'dk-team', skills: { pii_redaction: true } } });
      assert.equal(unnamed.status, 400, 'the config secret must name the tenant');
      const named = await call(gw, '/api/v1/dev_key/skills', { key: CONFIG_SECRET, body: { tenant_id: 'team', dev_key_id: 'dk-team', skills: { pii_redaction: true } } });
      assert.equal(named.status, 200);
      const crossOrg = await call(gw, '/api/v1/dev_key/skills', { key: TEAM, body: { dev_key_id: 'dk-ent', skills: { pii_redaction: true } } });
      assert.equal(crossOrg.status, 404, 'another org’s key id answers like an unknown one');
    });
  });
}

describe('skills on two replicas sharing one Redis', () => {
  let pair: ReplicaPair;
  let a: TestGateway;
  let b: TestGateway;
  before(async () => {
    pair = await startReplicaPair(BOOT);
    ({ a, b } = pair);
  });
  after(() => pair.close());

  it('a lifecycle write through one replica is what the other reads on its next request', async () => {
    assert.equal((await lifecycle(a, 'ent', 'model_routing', { key_id: 'dk-ent', mode: 'canary:40' })).status, 200);
    assert.equal(((await skillsOf(b, ENT, 'dk-ent'))?.['skill_modes'] as Record<string, string>)['model_routing'], 'canary:40');
    const merged = await call(b, '/api/v1/dev_key/skills', { key: ENT, body: { skill_modes: { semantic_cache: 'prod' } } });
    assert.deepEqual(merged.json['skill_modes'], { model_routing: 'canary:40', semantic_cache: 'prod' });
    assert.equal(((await skillsOf(a, ENT, 'dk-ent'))?.['skill_modes'] as Record<string, string>)['semantic_cache'], 'prod');
  });
});

describe('a write the store does not take is an error, never a 200', () => {
  let behind: Awaited<ReturnType<typeof startGatewayBehindProxy>>;
  let redis: Redis;
  before(async () => {
    behind = await startGatewayBehindProxy(BOOT, { GW_BYOK_STORE_TIMEOUT_S: '0.3' });
    redis = new Redis(REDIS_URL);
  });
  after(async () => {
    redis.disconnect();
    await behind.close();
  });
  const keys = () => redisKeys(behind.prefix);
  /** what Redis holds for the key's skills and its transitions, read past the gateway */
  const stored = async () => {
    const keyId = String((await skillsOf(behind.gw, ENT, 'dk-ent'))?.['key_id']);
    const skills = await redis.hget(keys().doc('key_skills'), keyId);
    type Doc = { skill_modes: Record<string, string>; skills: Record<string, boolean>; last_transitions?: Record<string, Record<string, unknown>> };
    const doc = skills === null ? { skill_modes: {}, skills: {} } : (JSON.parse(skills) as Doc);
    // each skill's latest transition rides with its mode; the history list is written after it
    const byId = new Map<unknown, Record<string, unknown>>();
    for (const t of Object.values((doc as Doc).last_transitions ?? {})) byId.set(t['id'], t);
    for (const skill of ['semantic_cache', 'pii_redaction']) {
      for (const t of await redis.lrange(keys().transitions(keyId, skill), 0, -1)) byId.set((JSON.parse(t) as Record<string, unknown>)['id'], JSON.parse(t) as Record<string, unknown>);
    }
    return { modes: doc.skill_modes, transitions: [...byId.values()], flags: doc.skills };
  };
  /**
   * Long enough for anything a 504'd request left running to reach Redis once
   * it answers again: a write, its echo wait (1 s at most) and a second write.
   * Absence can only be asserted after a bound; this one is generous.
   */
  const settle = () => new Promise((r) => setTimeout(r, 2000));

  it('lifecycle and dev_key/skills answer 504 store_timeout naming the stage when the store hangs; after Redis resumes neither the mode nor its record appears', async () => {
    behind.proxy.hang();
    const moved = await lifecycle(behind.gw, 'ent', 'pii_redaction', { key_id: 'dk-ent', mode: 'prod' });
    assert.equal(moved.status, 504);
    assert.equal(moved.headers.get('x-gw-error'), 'store_timeout');
    assert.equal(moved.headers.get('retry-after'), '5');
    assert.match(moved.headers.get('x-gw-stage-durations') ?? '', /store_write;dur=[\d.]+;running/);
    const saved = await call(behind.gw, '/api/v1/dev_key/skills', { key: ENT, body: { skills: { pii_redaction: true } } });
    assert.equal(saved.status, 504);
    behind.proxy.resume();
    await settle();
    const after504 = await stored();
    assert.deepEqual(after504, { modes: {}, transitions: [], flags: {} }, 'the caller was told both writes failed: neither landed');
  });

  /**
   * The caller was told the write failed, so once Redis answers again neither
   * the mode nor its transition record may appear: mode and record are one
   * Lua script (never one without the other), and the script carries the
   * deadline on Redis's clock, so a script that reaches Redis late is dropped.
   */
  it('a lifecycle script delayed in transit past the bound is dropped by Redis: neither mode nor record', async () => {
    // the deadline's TIME passes; the script itself is held and reaches Redis after the 504
    behind.proxy.hangOnCommand('eval', 'evalsha');
    const moved = await lifecycle(behind.gw, 'ent', 'semantic_cache', { key_id: 'dk-ent', mode: 'canary:30' });
    assert.equal(moved.status, 504);
    behind.proxy.resume();
    await settle();
    assert.deepEqual(await stored(), { modes: {}, transitions: [], flags: {} });

    const ok = await lifecycle(behind.gw, 'ent', 'semantic_cache', { key_id: 'dk-ent', mode: 'canary:30' });
    assert.equal(ok.status, 200);
    const written = await stored();
    assert.equal(written.modes['semantic_cache'], 'canary:30');
    assert.deepEqual(
      written.transitions.map((t) => [t['id'], t['from_mode'], t['to_mode']]),
      [[(ok.json['transition'] as Record<string, unknown>)['id'], 'off', 'canary:30']],
      'a write in time stores the mode and its record together',
    );
  });
});
