import { Type, type TSchema } from '@sinclair/typebox';
import { GatewayError } from '../errors.js';
import type { Route } from '../http/types.js';
import { compileSchema } from '../http/validate.js';
import { SURFACES } from '../surfaces/index.js';
import type { Entitlement, IdentifyOptions } from '../tenancy/entitlement.js';
import { isPerKeySkill, MODE_VOCABULARY, parseStoredMode, PER_KEY_SKILLS, type KeySkills, type SkillId, type StoredMode } from '../tenancy/skills.js';
import { sendJson } from './respond.js';

const surface = SURFACES.api;
/** Skill routes also take the deployment's config secret or admin key naming the tenant */
const ENTITLED: IdentifyOptions = { deploymentSecrets: true };

const KeyRef = Type.String({ minLength: 1, maxLength: 128 });
const perSkill = (value: TSchema) => Type.Object(Object.fromEntries(PER_KEY_SKILLS.map((s) => [s, Type.Optional(value)])), { additionalProperties: false });
const FoldParams = Type.Object(
  {
    min_fold_tokens: Type.Optional(Type.Integer({ minimum: 0 })),
    keep_recent_turns: Type.Optional(Type.Integer({ minimum: 0 })),
    max_fold_ratio: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1 })),
  },
  { additionalProperties: false },
);

export const SkillsBody = Type.Object(
  {
    dev_key_id: Type.Optional(KeyRef),
    key_id: Type.Optional(KeyRef),
    tenant_id: Type.Optional(Type.String()),
    skills: Type.Optional(perSkill(Type.Boolean())),
    skill_modes: Type.Optional(perSkill(Type.String())),
    locked_skills: Type.Optional(perSkill(Type.Boolean())),
    // checked after the plan gate: on other plans its mere presence refuses the save
    skill_params: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
);
const parseSkillsBody = compileSchema(SkillsBody);
const parseSkillParams = compileSchema(Type.Object({ agent_trajectory_compaction: Type.Optional(FoldParams) }, { additionalProperties: false }));
export const LifecycleBody = Type.Object(
  {
    key_id: Type.Optional(KeyRef),
    dev_key_id: Type.Optional(KeyRef),
    tenant_id: Type.Optional(Type.String()),
    mode: Type.Unknown(),
    reason: Type.Optional(Type.String({ maxLength: 2000 })),
    trigger_source: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.:+-]{1,128}$' })),
  },
  { additionalProperties: false },
);
const parseLifecycleBody = compileSchema(LifecycleBody);

const modeOrRefuse = (value: unknown, field: string): StoredMode => {
  const mode = parseStoredMode(value);
  if (mode === undefined) throw new GatewayError('request_error', `${field}: must be one of ${MODE_VOCABULARY}`, { fields: { field } });
  return mode;
};

/**
 * Per-key skill configuration and the lifecycle route (docs/api.md, Per-key
 * skills; Lifecycle). Both accept the org's own key, an IdP token of the org, or
 * the deployment's config secret or admin key naming the tenant; both write
 * the one key_skills store every replica reads.
 */
export function skillRoutes(entitlement: Entitlement, skills: KeySkills): Route[] {
  return [
    {
      method: 'POST',
      path: '/api/v1/dev_key/skills',
      surface,
      async handler(req, res) {
        const { principal, body: raw, tenant } = await entitlement.forJsonBody(req, ENTITLED);
        res.meta.tenant = tenant.org_id;
        const body = parseSkillsBody(raw);
        const ref = body.dev_key_id ?? body.key_id ?? (principal.kind === 'dev_key' ? principal.caller.key.key_id : undefined);
        if (ref === undefined) throw new GatewayError('request_error', 'dev_key_id: required', { fields: { field: 'dev_key_id' } });
        const { key, owner } = entitlement.key(tenant, ref);
        if (body.skill_params !== undefined && owner.plan !== 'enterprise') {
          throw new GatewayError('forbidden', 'skill_params: Enterprise plan only; nothing was saved', { fields: { field: 'skill_params' } });
        }
        const skillParams = body.skill_params === undefined ? undefined : parseSkillParams(body.skill_params, 'skill_params');
        const modes: Partial<Record<SkillId, StoredMode>> = {};
        for (const [skill, mode] of Object.entries(body.skill_modes ?? {})) modes[skill as SkillId] = modeOrRefuse(mode, `skill_modes.${skill}`);
        req.stages.begin('store_write');
        const config = await skills.update(
          key,
          { skills: body.skills, skill_modes: modes, locked_skills: body.locked_skills, skill_params: skillParams },
          req.stages,
        );
        req.stages.end();
        sendJson(res, 200, { status: 'success', key_id: key.key_id, dev_key_id: key.dev_key_id, ...config });
      },
    },
    {
      method: 'POST',
      path: '/api/v1/tenant/:org_id/skills/:skill_id/lifecycle',
      surface,
      async handler(req, res) {
        const { body: raw, tenant } = await entitlement.forJsonBody(req, ENTITLED);
        res.meta.tenant = tenant.org_id;
        const body = parseLifecycleBody(raw);
        const mode = modeOrRefuse(body.mode, 'mode');
        const skill = req.params['skill_id'] ?? '';
        if (!isPerKeySkill(skill)) {
          throw new GatewayError('request_error', `skill ${skill} is not a per-key skill; per-key skills: ${PER_KEY_SKILLS.join(', ')}`, { fields: { field: 'skill_id' } });
        }
        const ref = body.key_id ?? body.dev_key_id;
        if (ref === undefined) throw new GatewayError('request_error', 'key_id: required', { fields: { field: 'key_id' } });
        const { key } = entitlement.key(tenant, ref);
        req.stages.begin('store_write');
        const { config, transition } = await skills.transition(key, skill, mode, { trigger_source: body.trigger_source, reason: body.reason }, req.stages);
        req.stages.end();
        sendJson(res, 200, { status: 'success', stored_under: key.key_id, skill_modes: config.skill_modes, transition });
      },
    },
  ];
}
