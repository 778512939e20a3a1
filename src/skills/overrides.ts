import { GatewayError } from '../errors.js';
import { isPerKeySkill, PER_KEY_SKILLS, type KeySkillConfig, type SkillId, type StoredMode } from '../tenancy/skills.js';

/**
 * Per-request skill overrides: `x-gw-skills: skill=mode,skill=mode` on every
 * surface that takes skills, and `skill_overrides` on /v1/execute. A request
 * may only substitute `off`, `shadow` or `prod` for the key's stored mode:
 * `canary…` and `rolled_back` are key-level statements made on the lifecycle
 * route. Anything else is 400 request_error before anything goes upstream; an
 * override of a skill the key has locked is 403 skill_locked.
 */

export type RequestMode = 'off' | 'shadow' | 'prod';
export type SkillOverrides = Partial<Record<SkillId, RequestMode>>;

const REQUEST_MODES: readonly string[] = ['off', 'shadow', 'prod'];
const isRequestMode = (m: string): m is RequestMode => REQUEST_MODES.includes(m);

const refuse = (field: string, message: string): GatewayError => new GatewayError('request_error', `${field}: ${message}`, { fields: { field } });

function checkedPair(skill: string, mode: unknown, field: string): [SkillId, RequestMode] {
  if (!isPerKeySkill(skill)) throw refuse(field, `unknown skill ${JSON.stringify(skill)} (per-key skills: ${PER_KEY_SKILLS.join(', ')})`);
  if (typeof mode !== 'string' || !isRequestMode(mode)) {
    const keyLevel = typeof mode === 'string' && (mode.startsWith('canary') || mode === 'rolled_back');
    const why = keyLevel ? `${JSON.stringify(mode)} is set per key on the lifecycle route, not per request` : `unknown mode ${JSON.stringify(mode)}`;
    throw refuse(field, `${why}; a request may use off, shadow or prod`);
  }
  return [skill, mode];
}

/** `skill=mode,skill=mode` (spaces around items allowed; a pair repeated alike counts once); an empty header is no override. */
function fromHeader(value: string): SkillOverrides {
  const out: SkillOverrides = {};
  for (const item of value.split(',')) {
    const pair = item.trim();
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0 || pair.indexOf('=', eq + 1) !== -1) throw refuse('x-gw-skills', `malformed pair ${JSON.stringify(pair)}: expected skill=mode`);
    const [skill, mode] = checkedPair(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim(), 'x-gw-skills');
    // two layers that each set the header (a client and a proxy) may repeat a pair; contradicting ones are not guessed between
    const earlier = out[skill];
    if (earlier !== undefined && earlier !== mode) throw refuse('x-gw-skills', `${skill} is named twice, as ${earlier} and as ${mode}`);
    out[skill] = mode;
  }
  return out;
}

/** `{skill: mode}` from a JSON body; `field` names it in errors (dotted: `skill_overrides.pii_redaction`). */
function fromObject(value: unknown, field: string): SkillOverrides {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw refuse(field, 'must be an object of skill to off, shadow or prod');
  const out: SkillOverrides = {};
  for (const [skill, mode] of Object.entries(value)) {
    const [id, m] = checkedPair(skill, mode, `${field}.${skill}`);
    out[id] = m;
  }
  return out;
}

/**
 * The overrides of one request, validated: the `x-gw-skills` header, then the
 * body's `skill_overrides` (which wins for a skill both name). Pure: throws a
 * 400 request_error naming the field on anything malformed.
 */
export function parseSkillOverrides(header: string | undefined, body?: { value: unknown; field: string }): SkillOverrides {
  const fromHead = header === undefined ? {} : fromHeader(header);
  return body === undefined || body.value === undefined ? fromHead : { ...fromHead, ...fromObject(body.value, body.field) };
}

/** The skills an override touches that the key has locked, in table order. */
export const lockedOverrides = (overrides: SkillOverrides, config: KeySkillConfig): SkillId[] =>
  PER_KEY_SKILLS.filter((s) => overrides[s] !== undefined && config.locked_skills[s] === true);

/** 403 skill_locked when an override touches a locked skill; the error lists them under `locked`. */
export function refuseLocked(overrides: SkillOverrides, config: KeySkillConfig): void {
  const locked = lockedOverrides(overrides, config);
  if (locked.length > 0) throw new GatewayError('skill_locked', `skill_locked: the key has locked ${locked.join(', ')}; a request may not override it`, { fields: { locked } });
}

/** Each per-key skill's mode for one request: the stored mode, replaced by the request's override. */
export function effectiveModes(stored: Readonly<Record<SkillId, StoredMode>>, overrides: SkillOverrides): Record<SkillId, StoredMode> {
  const out = { ...stored };
  for (const s of PER_KEY_SKILLS) {
    const o = overrides[s];
    if (o !== undefined) out[s] = o;
  }
  return out;
}

/** Every per-key skill's stored mode for a key, as KeySkills reads it. */
export const storedModes = (modeOf: (skill: SkillId) => StoredMode): Record<SkillId, StoredMode> =>
  Object.fromEntries(PER_KEY_SKILLS.map((s) => [s, modeOf(s)])) as Record<SkillId, StoredMode>;
