import type { Directory } from '../tenancy/directory.js';
import { canaryPercent, type KeySkills, type SkillId, type TransitionRecord } from '../tenancy/skills.js';
import type { DevKey, Org } from '../tenancy/types.js';
import type { FeedbackStore } from './feedback.js';
import { SkillSamples } from './samples.js';
import { computeScorecard, judge, type Judgement, type Scorecard } from './scorecard.js';
import type { SampleSource } from './sources.js';

/** The scorecard windows, by name; `1h` is the default */
export const WINDOWS = { '15m': 15 * 60_000, '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 } as const;
export type WindowName = keyof typeof WINDOWS;
export const DEFAULT_WINDOW: WindowName = '1h';
export const isWindow = (w: string): w is WindowName => Object.hasOwn(WINDOWS, w);

export interface ScorecardDeps {
  samples: SampleSource;
  feedback: FeedbackStore;
  skills: KeySkills;
  directory: Directory;
  /** skills whose breaker is armed (GW_SKILL_AUTO_ROLLBACK) */
  armed: ReadonlySet<string>;
}

/** What the sweep acts on: a key's status, and what tripped. */
export type Verdict = Pick<Judgement, 'status' | 'breakers' | 'anomalies'>;

const DEPLOYMENT_HISTORY = 20;
/** the one group of a read over a tenant, or over one key */
const ALL = 'all';

/**
 * Gathers a scorecard's inputs (the window's samples, the tasks' feedback, the
 * transitions) and computes it: for the scorecard route and the breaker sweep.
 */
export class Scorecards {
  constructor(private readonly deps: ScorecardDeps) {}

  /** One skill's scorecard over a tenant, or over one of its keys. */
  async read(tenant: Org, skill: SkillId, window: WindowName, key: DevKey | undefined, now = Date.now()): Promise<Scorecard> {
    const rowTenant = key?.org_id ?? tenant.org_id;
    const groups = await this.deps.samples.samples(rowTenant, {
      skill,
      sinceMs: now - WINDOWS[window],
      nowMs: now,
      group: key === undefined ? () => ALL : (k) => (k === key.key_id ? ALL : undefined),
    });
    const keyIds = key !== undefined ? [key.key_id] : this.keysWithin(tenant.org_id);
    const history = await this.deps.skills.history(keyIds, skill, DEPLOYMENT_HISTORY);
    const samples = groups.get(ALL) ?? new SkillSamples();
    const feedback = await this.deps.feedback.outcomes(rowTenant, samples.feedbackKeys());
    const { kind } = this.deps.samples;
    return computeScorecard({
      skill,
      samples,
      feedback,
      armed: this.deps.armed.has(skill),
      history,
      canaryPercent: this.splitPercent(keyIds, skill),
      source: { store: kind, window, key_id: key?.key_id ?? null, ...(kind === 'process' && { scope: 'the answering process only: no durable store is configured' }) },
    });
  }

  /**
   * The verdicts of several keys of one tenant over one read of its samples
   * (the sweep), each counting only requests served since its key's latest
   * transition of the skill: requests served under an earlier mode do not
   * judge the current one.
   */
  async verdicts(tenantId: string, skill: SkillId, keyIds: readonly string[], window: WindowName, now = Date.now()): Promise<Map<string, Verdict>> {
    const wanted = new Set(keyIds);
    const since = new Map<string, TransitionRecord>();
    for (const k of keyIds) {
      const latest = this.deps.skills.latestTransition(k, skill);
      if (latest !== undefined) since.set(k, latest);
    }
    const groups = await this.deps.samples.samples(tenantId, { skill, sinceMs: now - WINDOWS[window], nowMs: now, group: (k) => (wanted.has(k) ? k : undefined), since });
    const feedbackKeys = new Set<string>();
    for (const samples of groups.values()) for (const k of samples.feedbackKeys()) feedbackKeys.add(k);
    const feedback = await this.deps.feedback.outcomes(tenantId, [...feedbackKeys]);
    const out = new Map<string, Verdict>();
    const armed = this.deps.armed.has(skill);
    for (const keyId of keyIds) {
      const { status, breakers, anomalies } = judge({ skill, samples: groups.get(keyId) ?? new SkillSamples(), feedback, armed });
      out.set(keyId, { status, breakers, anomalies });
    }
    return out;
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
