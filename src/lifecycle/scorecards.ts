import type { Directory } from '../tenancy/directory.js';
import { canaryPercent, type KeySkills, type SkillId, type TransitionRecord } from '../tenancy/skills.js';
import type { DevKey, Org } from '../tenancy/types.js';
import type { FeedbackStore } from './feedback.js';
import type { RowSource, ScorecardRow } from './rows.js';
import { computeScorecard, feedbackKeys, type Scorecard } from './scorecard.js';

/** The scorecard windows, by name; `1h` is the default */
export const WINDOWS = { '15m': 15 * 60_000, '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 } as const;
export type WindowName = keyof typeof WINDOWS;
export const DEFAULT_WINDOW: WindowName = '1h';
export const isWindow = (w: string): w is WindowName => Object.hasOwn(WINDOWS, w);

export interface ScorecardDeps {
  rows: RowSource;
  feedback: FeedbackStore;
  skills: KeySkills;
  directory: Directory;
  /** skills whose breaker is armed (GW_SKILL_AUTO_ROLLBACK) */
  armed: ReadonlySet<string>;
}

const DEPLOYMENT_HISTORY = 20;

/**
 * Gathers a scorecard's inputs (rows of the window, the tasks' feedback, the
 * transitions) and computes it: for the scorecard route and the breaker sweep.
 */
export class Scorecards {
  constructor(private readonly deps: ScorecardDeps) {}

  /** One skill's scorecard over a tenant, or over one of its keys. */
  async read(tenant: Org, skill: SkillId, window: WindowName, key: DevKey | undefined, now = Date.now()): Promise<Scorecard> {
    const sinceMs = now - WINDOWS[window];
    const rowTenant = key?.org_id ?? tenant.org_id;
    const rows = [...(await this.deps.rows.rows(rowTenant, { sinceMs, keyId: key?.key_id, skill }))];
    const keyIds = key !== undefined ? [key.key_id] : this.keysWithin(tenant.org_id);
    return this.compute(rowTenant, skill, rows, await this.deps.skills.history(keyIds, skill, DEPLOYMENT_HISTORY), this.splitPercent(keyIds, skill), {
      window,
      key_id: key?.key_id ?? null,
    });
  }

  /**
   * The scorecards of several keys of one tenant over one read of its rows
   * (the sweep), each counting only rows since its key's latest transition of
   * the skill: rows served under an earlier mode do not judge the current one.
   */
  async readKeys(tenantId: string, skill: SkillId, keyIds: readonly string[], window: WindowName, now = Date.now()): Promise<Map<string, Scorecard>> {
    const sinceMs = now - WINDOWS[window];
    const byKey = new Map<string, ScorecardRow[]>(keyIds.map((k) => [k, []]));
    for (const row of await this.deps.rows.rows(tenantId, { sinceMs, skill })) byKey.get(row.key_id)?.push(row);
    const out = new Map<string, Scorecard>();
    for (const keyId of keyIds) {
      const history = await this.deps.skills.history([keyId], skill, DEPLOYMENT_HISTORY);
      const since = new Date(Math.max(sinceMs, history[0] ? Date.parse(history[0].timestamp) : 0)).toISOString();
      const rows = (byKey.get(keyId) ?? []).filter((r) => r.ts >= since);
      out.set(keyId, await this.compute(tenantId, skill, rows, history, this.splitPercent([keyId], skill), { window, key_id: keyId }));
    }
    return out;
  }

  private async compute(tenantId: string, skill: SkillId, rows: ScorecardRow[], history: TransitionRecord[], percent: number | null, about: Record<string, unknown>): Promise<Scorecard> {
    const feedback = await this.deps.feedback.outcomes(tenantId, feedbackKeys(rows));
    const { kind } = this.deps.rows;
    return computeScorecard({
      skill,
      rows,
      feedback,
      armed: this.deps.armed.has(skill),
      history,
      canaryPercent: percent,
      source: { store: kind, ...about, ...(kind === 'process' && { scope: 'the answering process only: no durable store is configured' }) },
    });
  }

  /** keys of the tenant and its sub-tenants that have a skill configuration (only those have transitions) */
  private keysWithin(orgId: string): string[] {
    const out: string[] = [];
    for (const doc of this.deps.skills.configuredKeys()) {
      const key = this.deps.directory.key(doc.key_id);
      if (key && this.deps.directory.isWithin(key.org_id, orgId)) out.push(key.key_id);
    }
    return out;
  }

  /** the canary percent the keys share, for the split check; null when they are not all on one canary */
  private splitPercent(keyIds: readonly string[], skill: SkillId): number | null {
    const percents = new Set(keyIds.map((k) => canaryPercent(this.deps.skills.effectiveMode(k, skill))));
    const [only] = percents;
    return percents.size === 1 && only !== undefined ? only : null;
  }
}
