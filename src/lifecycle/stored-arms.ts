import { armFor } from '../skills/arms.js';
import type { StoredArms } from '../telemetry/row.js';
import { PER_KEY_SKILLS, type SkillId, type StoredMode } from '../tenancy/skills.js';

/** The keys' stored skill modes (KeySkills). */
export interface StoredModes {
  effectiveMode(keyId: string, skill: SkillId): StoredMode;
}

const NONE: ReadonlyArray<readonly [string, string]> = [];

/**
 * The arms a request is in by its key's stored modes, drawn as the skill
 * engine draws them (armFor): each row carries its per-key skills' arms, so a
 * scorecard can split a key's traffic even for skills the engine did not
 * report on a request (its own reports replace these in the row).
 */
export function storedArms(modes: StoredModes): StoredArms {
  return (keyId, sessionId, requestId) => {
    let out: Array<readonly [string, string]> | undefined;
    for (const skill of PER_KEY_SKILLS) {
      const arm = armFor(skill, modes.effectiveMode(keyId, skill), sessionId, requestId);
      if (arm !== null) (out ??= []).push([skill, arm]);
    }
    return out ?? NONE;
  };
}
