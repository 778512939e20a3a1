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
  /**
   * Each skill's latest transition, written in the same atomic write as the
   * mode it moved to: the mode never moves without its record. The history
   * itself lives in the transition log, outside the replicated mirror.
   */
  last_transitions?: Partial<Record<SkillId, TransitionRecord>>;
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

/**
 * Where each key's and skill's transitions are kept, bounded per key and skill
 * (Redis: a capped list; embedded: a bounded persisted document), out of the
 * configuration mirror every replica holds in memory.
 */
export interface TransitionLog {
  append(t: TransitionRecord): Promise<void>;
  /** the newest `limit` transitions of one key and skill, newest first */
  recent(keyId: string, skill: SkillId, limit: number): Promise<TransitionRecord[]>;
}

/** Transitions kept per key and skill; the scorecard shows the last 20 */
export const TRANSITIONS_KEPT = 100;

const newestFirst = (a: TransitionRecord, b: TransitionRecord) => b.timestamp.localeCompare(a.timestamp) || b.id.localeCompare(a.id);

/** Embedded transition log: one bounded document per key and skill in the (persisted) store. */
export class StoredTransitionLog implements TransitionLog {
  constructor(private readonly store: DocStore) {}

  async append(t: TransitionRecord): Promise<void> {
    const id = `${t.key_id}:${t.skill_id}`;
    const current = this.store.get<{ entries: TransitionRecord[] }>('transitions', id)?.entries ?? [];
    await this.store.put('transitions', id, { entries: [t, ...current].slice(0, TRANSITIONS_KEPT) });
  }

  async recent(keyId: string, skill: SkillId, limit: number): Promise<TransitionRecord[]> {
    return (this.store.get<{ entries: TransitionRecord[] }>('transitions', `${keyId}:${skill}`)?.entries ?? []).slice(0, limit);
  }
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
    private readonly log: TransitionLog = new StoredTransitionLog(store),
    private readonly warn: (obj: object, msg: string) => void = () => undefined,
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
    await this.write(key, next, stages, this.store.get<KeySkillsDoc>('key_skills', key.key_id)?.last_transitions);
    return next;
  }

  /** The key's latest transition of the skill (kept with its mode in the mirror), if it ever had one. */
  latestTransition(keyId: string, skill: SkillId): TransitionRecord | undefined {
    return this.store.get<KeySkillsDoc>('key_skills', keyId)?.last_transitions?.[skill];
  }

  /** Keys with a stored configuration, for the breaker sweep. */
  configuredKeys(): IterableIterator<{ key_id: string }> {
    return this.store.values<KeySkillsDoc>('key_skills');
  }

  /**
   * Moves one skill of one key to `mode` and records the transition; a failed
   * write throws. With `onlyFrom`, nothing is written (undefined) unless the
   * skill's mode is still the one the caller decided on.
   */
  async transition(
    key: DevKey,
    skill: SkillId,
    mode: StoredMode,
    cause: { trigger_source?: string; reason?: string; onlyFrom?: StoredMode },
    stages: StageClock,
  ): Promise<{ config: KeySkillConfig; transition: TransitionRecord }> {
    const current: Partial<KeySkillsDoc> & KeySkillConfig = this.store.get<KeySkillsDoc>('key_skills', key.key_id) ?? EMPTY;
    if (cause.onlyFrom !== undefined && this.effectiveMode(key.key_id, skill) !== cause.onlyFrom) {
      throw new GatewayError('conflict', `skill ${skill} of key ${key.key_id} is no longer ${cause.onlyFrom}; nothing was written`);
    }
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
    const config: KeySkillConfig = {
      skills: current.skills,
      skill_modes: { ...current.skill_modes, [skill]: mode },
      locked_skills: current.locked_skills,
      skill_params: current.skill_params,
    };
    // one atomic write: the mode never moves without its record, nor the record without the mode
    await this.write(key, config, stages, { ...current.last_transitions, [skill]: transition });
    // then the bounded history; if this append fails the record still stands as the latest transition
    await this.log.append(transition).catch((err: unknown) => this.warn({ err, transition: transition.id }, 'transition recorded with its mode but not appended to the history'));
    return { config, transition };
  }

  /**
   * The last `limit` transitions of a skill over the given keys, newest first
   * (scorecard deployment_history): the history log and each key's latest
   * transition, which the log may lack if its append failed.
   */
  async history(keyIds: readonly string[], skill: SkillId, limit = 20): Promise<TransitionRecord[]> {
    const byId = new Map<string, TransitionRecord>();
    const logged = await Promise.all(keyIds.map((k) => this.log.recent(k, skill, limit)));
    for (const t of logged.flat()) byId.set(t.id, t);
    for (const k of keyIds) {
      const last = this.latestTransition(k, skill);
      if (last !== undefined) byId.set(last.id, last);
    }
    return [...byId.values()].sort(newestFirst).slice(0, limit);
  }

  /**
   * Writes the key's skills document (with any further documents, atomically)
   * under the store bound. The store drops the write if it arrives past the
   * bound, so a 504 answered at the bound is not followed by the write landing
   * later (the DocStore putAll contract says what remains).
   */
  private write(key: DevKey, config: KeySkillConfig, stages: StageClock, lastTransitions: KeySkillsDoc['last_transitions']): Promise<void> {
    const doc: KeySkillsDoc = {
      key_id: key.key_id,
      org_id: key.org_id,
      ...config,
      updated_at: new Date().toISOString(),
      ...(lastTransitions !== undefined && { last_transitions: lastTransitions }),
    };
    const writes: DocWrite[] = [{ collection: 'key_skills', id: key.key_id, doc }];
    return withinStoreBound(this.store.putAll(writes, { deadline: Date.now() + this.timeoutMs }), this.timeoutMs, stages, 'writing the key skills');
  }
}
