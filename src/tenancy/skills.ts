import { randomBytes } from 'node:crypto';
import { GatewayError } from '../errors.js';
import type { StageClock } from '../http/stages.js';
import type { DocStore, DocWrite } from '../stores/types.js';
import { withinStoreBound } from './store-timeout.js';
import type { DevKey } from './types.js';

/** The per-key skills: the only skills with stored modes. */
export const PER_KEY_SKILLS = ['semantic_cache', 'prompt_compaction', 'pii_redaction', 'model_routing', 'agent_trajectory_compaction'] as const;
export type SkillId = (typeof PER_KEY_SKILLS)[number];

export const isPerKeySkill = (s: string): s is SkillId => (PER_KEY_SKILLS as readonly string[]).includes(s);

/** A stored mode as written: `canary` is always stored with its percent (`canary:10`). */
export type StoredMode = 'off' | 'shadow' | 'prod' | 'rolled_back' | `canary:${number}`;

export const MODE_VOCABULARY = 'off, shadow, canary:N (N an integer 1 to 99), canary (= canary:10), prod, rolled_back';
const CANARY = /^canary:([1-9][0-9]?)$/;
const DEFAULT_CANARY_PERCENT = 10;

/** Normalizes a posted mode, or undefined when it is outside the vocabulary. */
export function parseStoredMode(value: unknown): StoredMode | undefined {
  if (value === 'off' || value === 'shadow' || value === 'prod' || value === 'rolled_back') return value;
  if (value === 'canary') return `canary:${DEFAULT_CANARY_PERCENT}`;
  if (typeof value === 'string' && CANARY.test(value)) return value as StoredMode;
  return undefined;
}

export const canaryPercent = (mode: StoredMode): number | null => {
  const m = CANARY.exec(mode);
  return m ? Number(m[1]) : null;
};

/** `skill_params` of agent_trajectory_compaction, the only skill that takes them. */
export interface FoldParams {
  min_fold_tokens?: number;
  keep_recent_turns?: number;
  max_fold_ratio?: number;
}

/** One key's skill configuration (the `key_skills` document, also the read API of the skills stage). */
export interface KeySkillConfig {
  skills: Partial<Record<SkillId, boolean>>;
  skill_modes: Partial<Record<SkillId, StoredMode>>;
  locked_skills: Partial<Record<SkillId, boolean>>;
  skill_params: { agent_trajectory_compaction?: FoldParams };
}

interface KeySkillsDoc extends KeySkillConfig {
  key_id: string;
  org_id: string;
  updated_at: string;
}

export type SkillConfigUpdate = Partial<KeySkillConfig>;

/** One recorded change of a key's skill mode (the lifecycle route's `transition`). */
export interface TransitionRecord {
  id: string;
  org_id: string;
  key_id: string;
  skill_id: SkillId;
  from_mode: StoredMode;
  to_mode: StoredMode;
  canary_percent: number | null;
  trigger_source: string;
  reason: string | null;
  timestamp: string;
}

const DEFAULT_TRIGGER_SOURCE = 'user:api';
const EMPTY: KeySkillConfig = Object.freeze({ skills: {}, skill_modes: {}, locked_skills: {}, skill_params: {} });

const newTransitionId = () => `tr_${Date.now().toString(36)}${randomBytes(5).toString('hex')}`;

/**
 * Per-key skill flags, modes, locks and params, and the lifecycle transitions
 * that moved them. Reads come from the store's mirror (every replica follows
 * writes through change notifications), so the next request on any replica
 * sees a write once it has been acknowledged.
 */
export class KeySkills {
  constructor(
    private readonly store: DocStore,
    /** bound on each write (GW_BYOK_STORE_TIMEOUT_S in ms) */
    private readonly timeoutMs: number,
  ) {}

  config(keyId: string): KeySkillConfig {
    return this.store.get<KeySkillsDoc>('key_skills', keyId) ?? EMPTY;
  }

  /**
   * The mode a request on this key starts from: the stored mode; else `prod`
   * when only the flag is set true; else `off` (a skill never set is off).
   */
  effectiveMode(keyId: string, skill: SkillId): StoredMode {
    const c = this.config(keyId);
    return c.skill_modes[skill] ?? (c.skills[skill] === true ? 'prod' : 'off');
  }

  isLocked(keyId: string, skill: SkillId): boolean {
    return this.config(keyId).locked_skills[skill] === true;
  }

  /** Merges flags, modes, locks and params into the key's stored configuration. */
  async update(key: DevKey, update: SkillConfigUpdate, stages: StageClock): Promise<KeySkillConfig> {
    const current = this.config(key.key_id);
    const next: KeySkillConfig = {
      skills: { ...current.skills, ...update.skills },
      skill_modes: { ...current.skill_modes, ...update.skill_modes },
      locked_skills: { ...current.locked_skills, ...update.locked_skills },
      skill_params: { ...current.skill_params, ...update.skill_params },
    };
    for (const [skill, locked] of Object.entries(update.locked_skills ?? {})) {
      if (locked && next.skill_modes[skill as SkillId] === undefined) {
        throw new GatewayError('request_error', `locked_skills.${skill}: a lock needs a stored mode; set skill_modes.${skill} with it or first`, {
          fields: { field: `locked_skills.${skill}` },
        });
      }
    }
    await this.write(key, next, stages);
    return next;
  }

  /** Moves one skill of one key to `mode` and records the transition; a failed write throws. */
  async transition(
    key: DevKey,
    skill: SkillId,
    mode: StoredMode,
    cause: { trigger_source?: string; reason?: string },
    stages: StageClock,
  ): Promise<{ config: KeySkillConfig; transition: TransitionRecord }> {
    const current = this.config(key.key_id);
    const transition: TransitionRecord = {
      id: newTransitionId(),
      org_id: key.org_id,
      key_id: key.key_id,
      skill_id: skill,
      from_mode: current.skill_modes[skill] ?? 'off',
      to_mode: mode,
      canary_percent: canaryPercent(mode),
      trigger_source: cause.trigger_source ?? DEFAULT_TRIGGER_SOURCE,
      reason: cause.reason ?? null,
      timestamp: new Date().toISOString(),
    };
    const config: KeySkillConfig = { ...current, skill_modes: { ...current.skill_modes, [skill]: mode } };
    // one atomic write: the mode never moves without its record, nor the record without the mode
    await this.write(key, config, stages, { collection: 'transitions', id: transition.id, doc: transition });
    return { config, transition };
  }

  /** The org's last `limit` transitions of a skill, newest first (scorecard deployment_history). */
  history(orgId: string, skill: SkillId, limit = 20): TransitionRecord[] {
    const out: TransitionRecord[] = [];
    for (const t of this.store.values<TransitionRecord>('transitions')) if (t.org_id === orgId && t.skill_id === skill) out.push(t);
    return out.sort((a, b) => b.timestamp.localeCompare(a.timestamp) || b.id.localeCompare(a.id)).slice(0, limit);
  }

  /**
   * Writes the key's skills document (with any further documents, atomically)
   * under the store bound. The store drops the write if it arrives past the
   * bound, so a 504 answered at the bound is not followed by the write landing
   * later (the DocStore putAll contract says what remains).
   */
  private write(key: DevKey, config: KeySkillConfig, stages: StageClock, ...more: DocWrite[]): Promise<void> {
    const doc: KeySkillsDoc = { key_id: key.key_id, org_id: key.org_id, ...config, updated_at: new Date().toISOString() };
    const writes: DocWrite[] = [{ collection: 'key_skills', id: key.key_id, doc }, ...more];
    return withinStoreBound(this.store.putAll(writes, { deadline: Date.now() + this.timeoutMs }), this.timeoutMs, stages, 'writing the key skills');
  }
}
