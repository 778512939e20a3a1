import { canaryPercent, type StoredMode } from '../tenancy/skills.js';

/**
 * Which arm a request is in for one skill: `prod` is all
 * treatment, `shadow` is shadow, `canary:N` puts N percent of sessions in
 * treatment and the rest in control. The draw hashes the skill with the
 * session id (else the request id), so a session keeps its arm while N is
 * unchanged, and a session's arms for two skills are drawn independently.
 */
export type Arm = 'treatment' | 'control' | 'shadow';

/** FNV-1a over UTF-16 code units, then murmur3's finaliser so nearby ids spread over all buckets. */
function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The request's arm for `skill` in `mode`, or null when the skill does not run (`off`, `rolled_back`). */
export function armFor(skill: string, mode: StoredMode, sessionId: string | undefined, requestId: string): Arm | null {
  if (mode === 'prod') return 'treatment';
  if (mode === 'shadow') return 'shadow';
  const percent = canaryPercent(mode);
  if (percent === null) return null;
  // an empty session id is no session
  return hash32(`${skill}\u0000${sessionId || requestId}`) % 100 < percent ? 'treatment' : 'control';
}
