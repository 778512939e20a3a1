import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { StageClock } from '../http/stages.js';
import type { Directory } from '../tenancy/directory.js';
import { isPerKeySkill, type KeySkills, type SkillId, type StoredMode } from '../tenancy/skills.js';
import { DEFAULT_WINDOW, type Scorecards } from './scorecards.js';

/** Who sweeps: the replica holding the lease. It expires when its holder stops renewing it (a dead replica). */
export interface SweepLease {
  /** takes the lease when free or renews it when this replica holds it; true when held afterwards */
  hold(ttlMs: number): Promise<boolean>;
}

/** Embedded deployments are one process: it always sweeps. */
export const SOLE_PROCESS: SweepLease = { hold: async () => true };

export interface SweepObserver {
  run(result: 'swept' | 'standby' | 'failed'): void;
  rolledBack(skill: string): void;
  failed(skill: string): void;
}

export interface SweepLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface SweepDeps {
  scorecards: Scorecards;
  skills: KeySkills;
  directory: Directory;
  /** skills whose breaker is armed (GW_SKILL_AUTO_ROLLBACK) */
  armed: readonly string[];
  lease: SweepLease;
  periodMs: number;
  observer: SweepObserver;
  log: SweepLog;
}

export interface SweepReport {
  keys: number;
  rolled_back: number;
  failed: number;
}

/** modes whose requests are samples: the breaker watches them */
const SAMPLED = (mode: StoredMode) => mode === 'shadow' || mode === 'prod' || mode.startsWith('canary:');

/**
 * The breaker sweep: every period, on a timer and never on a request, the
 * replica holding the lease reads the scorecard of every key and armed skill
 * in shadow, canary or prod, and rolls back each one whose breaker tripped,
 * through the same store write as the lifecycle route (mode and transition
 * together). Nothing moves a skill out of rolled_back here.
 */
export class BreakerSweep {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private readonly armed: SkillId[];

  constructor(private readonly deps: SweepDeps) {
    this.armed = deps.armed.filter(isPerKeySkill);
  }

  start(): void {
    this.timer = setInterval(() => {
      // a sweep slower than the period does not stack a second one on it
      if (this.running === undefined) this.running = this.runOnce().finally(() => (this.running = undefined));
    }, this.deps.periodMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One sweep; null when another replica holds the lease. */
  async runOnce(now = Date.now()): Promise<SweepReport | null> {
    const { lease, observer, log, periodMs } = this.deps;
    let held: boolean;
    try {
      // three periods: a holder that missed two renewals is presumed dead
      held = await lease.hold(periodMs * 3);
    } catch (err) {
      observer.run('failed');
      log.warn({ err: (err as Error).message }, 'breaker sweep: lease unavailable; skipped');
      return null;
    }
    if (!held) {
      observer.run('standby');
      return null;
    }
    const report: SweepReport = { keys: 0, rolled_back: 0, failed: 0 };
    for (const [tenant, bySkill] of this.watched()) {
      for (const [skill, keys] of bySkill) {
        report.keys += keys.length;
        try {
          const verdicts = await this.deps.scorecards.verdicts(tenant, skill, keys.map((k) => k.keyId), DEFAULT_WINDOW, now);
          for (const { keyId, mode } of keys) {
            const verdict = verdicts.get(keyId);
            if (verdict?.status !== 'CIRCUIT_BREAKER_TRIGGERED') continue;
            if (await this.rollBack(keyId, skill, mode, verdict.breakers, verdict.anomalies)) report.rolled_back++;
            else report.failed++;
          }
        } catch (err) {
          report.failed++;
          observer.failed(skill);
          log.error({ err: (err as Error).message, tenant, skill }, 'breaker sweep: scorecards could not be read');
        }
        // a long sweep leaves room for the requests it shares the loop with
        await yieldToLoop();
      }
    }
    observer.run(report.failed > 0 ? 'failed' : 'swept');
    log.info({ ...report }, 'breaker sweep');
    return report;
  }

  /** tenant → armed skill → keys whose mode for it is sampled */
  private watched(): Map<string, Map<SkillId, Array<{ keyId: string; mode: StoredMode }>>> {
    const out = new Map<string, Map<SkillId, Array<{ keyId: string; mode: StoredMode }>>>();
    for (const { key_id } of this.deps.skills.configuredKeys()) {
      const key = this.deps.directory.key(key_id);
      if (key === undefined) continue;
      for (const skill of this.armed) {
        const mode = this.deps.skills.effectiveMode(key_id, skill);
        if (!SAMPLED(mode)) continue;
        const bySkill = out.get(key.org_id) ?? new Map<SkillId, Array<{ keyId: string; mode: StoredMode }>>();
        out.set(key.org_id, bySkill);
        const list = bySkill.get(skill) ?? [];
        bySkill.set(skill, list);
        list.push({ keyId: key_id, mode });
      }
    }
    return out;
  }

  private async rollBack(keyId: string, skill: SkillId, mode: StoredMode, breakers: readonly string[], anomalies: readonly string[]): Promise<boolean> {
    const key = this.deps.directory.key(keyId);
    if (key === undefined) return false;
    try {
      const { transition } = await this.deps.skills.transition(
        key,
        skill,
        'rolled_back',
        { trigger_source: `auto:${breakers.join('+')}`, reason: anomalies.join('; '), onlyFrom: mode },
        new StageClock(),
      );
      this.deps.observer.rolledBack(skill);
      this.deps.log.warn({ key_id: keyId, org_id: key.org_id, skill, from_mode: mode, trigger_source: transition.trigger_source, reason: transition.reason }, 'breaker sweep rolled a skill back');
      return true;
    } catch (err) {
      this.deps.observer.failed(skill);
      this.deps.log.error({ err: (err as Error).message, key_id: keyId, skill }, 'breaker sweep: rollback not written');
      return false;
    }
  }
}
