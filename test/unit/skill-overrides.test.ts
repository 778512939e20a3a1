import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from '../../src/errors.js';
import { effectiveModes, lockedOverrides, parseSkillOverrides, refuseLocked, storedModes } from '../../src/skills/overrides.js';
import type { KeySkillConfig } from '../../src/tenancy/skills.js';

/** the 400 a parse throws: its type and the field it names */
function refusal(f: () => unknown): { type: string; field: unknown; message: string } {
  try {
    f();
  } catch (err) {
    assert.ok(err instanceof GatewayError);
    return { type: err.type, field: err.options.fields?.['field'], message: err.message };
  }
  assert.fail('expected a refusal');
}

describe('parseSkillOverrides', () => {
  it('reads skill=mode pairs, spaces and empty items tolerated', () => {
    assert.deepEqual(parseSkillOverrides(' pii_redaction=shadow, semantic_cache = off ,,model_routing=prod'), { pii_redaction: 'shadow', semantic_cache: 'off', model_routing: 'prod' });
    assert.deepEqual(parseSkillOverrides(undefined), {});
    assert.deepEqual(parseSkillOverrides(''), {});
  });

  it('refuses a skill the header names twice with different modes, and takes one named twice alike once', () => {
    const r = refusal(() => parseSkillOverrides('pii_redaction=prod, semantic_cache=off,pii_redaction=off'));
    assert.equal(r.type, 'request_error');
    assert.equal(r.field, 'x-gw-skills');
    assert.match(r.message, /pii_redaction.*twice.*prod.*off/);
    assert.deepEqual(parseSkillOverrides('pii_redaction=shadow,pii_redaction=shadow'), { pii_redaction: 'shadow' });
  });

  it('lets the body object win over the header for a skill both name', () => {
    assert.deepEqual(parseSkillOverrides('pii_redaction=shadow,semantic_cache=off', { value: { semantic_cache: 'prod' }, field: 'skill_overrides' }), { pii_redaction: 'shadow', semantic_cache: 'prod' });
    assert.deepEqual(parseSkillOverrides(undefined, { value: undefined, field: 'skill_overrides' }), {});
  });

  const refused: Array<[string, string]> = [
    ['unknown skill', 'mind_reading=prod'],
    ['guardrails (not a per-key skill)', 'guardrails=off'],
    ['unknown mode', 'pii_redaction=sometimes'],
    ['canary', 'pii_redaction=canary'],
    ['canary:N', 'pii_redaction=canary:20'],
    ['rolled_back', 'pii_redaction=rolled_back'],
    ['a pair without =', 'pii_redaction'],
    ['a pair with two =', 'pii_redaction=off=on'],
    ['an empty skill', '=off'],
    ['an empty mode', 'pii_redaction='],
  ];
  for (const [name, header] of refused) {
    it(`refuses ${name} in the header with a 400 naming x-gw-skills`, () => {
      const r = refusal(() => parseSkillOverrides(header));
      assert.equal(r.type, 'request_error');
      assert.equal(r.field, 'x-gw-skills');
    });
  }

  it('says a canary or rolled_back is set per key on the lifecycle route', () => {
    assert.match(refusal(() => parseSkillOverrides('pii_redaction=canary:5')).message, /lifecycle route/);
    assert.match(refusal(() => parseSkillOverrides('pii_redaction=rolled_back')).message, /lifecycle route/);
  });

  it('names the skill at fault in a body object, and refuses what is not an object', () => {
    assert.equal(refusal(() => parseSkillOverrides(undefined, { value: { pii_redaction: 'canary:5' }, field: 'skill_overrides' })).field, 'skill_overrides.pii_redaction');
    assert.equal(refusal(() => parseSkillOverrides(undefined, { value: { pii_redaction: 3 }, field: 'skill_overrides' })).field, 'skill_overrides.pii_redaction');
    assert.equal(refusal(() => parseSkillOverrides(undefined, { value: ['pii_redaction'], field: 'skill_overrides' })).field, 'skill_overrides');
  });
});

describe('locks and effective modes', () => {
  const config: KeySkillConfig = { skills: {}, skill_modes: { pii_redaction: 'prod', semantic_cache: 'canary:20' }, locked_skills: { pii_redaction: true, semantic_cache: false }, skill_params: {} };

  it('lists the locked skills an override touches, and refuses them with 403 skill_locked', () => {
    assert.deepEqual(lockedOverrides({ pii_redaction: 'off', semantic_cache: 'off' }, config), ['pii_redaction']);
    assert.deepEqual(lockedOverrides({ semantic_cache: 'off' }, config), []);
    try {
      refuseLocked({ pii_redaction: 'shadow' }, config);
      assert.fail('expected skill_locked');
    } catch (err) {
      assert.ok(err instanceof GatewayError);
      assert.equal(err.type, 'skill_locked');
      assert.equal(err.status, 403);
      assert.deepEqual(err.options.fields?.['locked'], ['pii_redaction']);
    }
    assert.doesNotThrow(() => refuseLocked({}, config));
  });

  it('replaces the stored mode with the override, keeping the rest (canary as stored)', () => {
    const stored = storedModes((s) => config.skill_modes[s] ?? 'off');
    assert.deepEqual(effectiveModes(stored, { pii_redaction: 'off', model_routing: 'shadow' }), {
      semantic_cache: 'canary:20',
      prompt_compaction: 'off',
      pii_redaction: 'off',
      model_routing: 'shadow',
      agent_trajectory_compaction: 'off',
    });
    assert.deepEqual(stored['pii_redaction'], 'prod', 'the stored modes are not changed');
  });
});
