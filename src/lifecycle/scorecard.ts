import type { TransitionRecord } from '../tenancy/skills.js';
import type { StoreKind } from './sources.js';
import { feedbackKey, type ArmSamples, type ArmTotals, type SkillSamples } from './samples.js';
import { spreadOf } from './sketch.js';
import { round4, splitCheck, wilson, type SplitCheck } from './stats.js';

/**
 * The scorecard of one skill over a window of samples: treatment against
 * control, computed on every read and never stored (docs/api.md, Scorecard).
 * Pure: the samples (samples.ts), task feedback and transitions in, the
 * scorecard object out.
 */

export type ScorecardStatus = 'HEALTHY' | 'REGRESSION_WARNING' | 'BREAKER_ADVISORY' | 'CIRCUIT_BREAKER_TRIGGERED' | 'NO_DATA';
export type Breaker = 'fail_open_rate' | 'tool_call_fidelity' | 'turns_per_task' | 'task_success' | 'goodput' | 'fold_ledger';
export type TaskOutcome = 'success' | 'failure';

/** The samples needed before status is computed, and per arm before two arms are compared */
export const MIN_SAMPLES = 20;
export const THRESHOLDS = {
  failOpenRate: 0.01,
  toolCallFidelity: 0.97,
  turnsUpTrip: 0.25,
  turnsUpWarn: 0.15,
  taskSuccessDrop: 0.05,
  goodputDrop: 0.05,
  foldMovesMin: 5,
  upstreamErrorGap: 0.05,
  retryRatio: 2,
  sessionCoverageGap: 0.2,
} as const;

const FOLD_SKILL = 'agent_trajectory_compaction';

export interface ScorecardInput {
  skill: string;
  samples: SkillSamples;
  /** task outcomes by feedbackKey() (SkillSamples.feedbackKeys() says which to look up) */
  feedback: ReadonlyMap<string, TaskOutcome>;
  /** auto-rollback is armed for this skill (GW_SKILL_AUTO_ROLLBACK) */
  armed: boolean;
  /** newest first; the last 20 are shown */
  history: readonly TransitionRecord[];
  /** the configured canary percent, for the split check; null when not one canary */
  canaryPercent: number | null;
  source: { store: StoreKind } & Record<string, unknown>;
}

const rate = (k: number, n: number): number | null => (n === 0 ? null : round4(k / n));
const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;
const signedPct = (x: number): string => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}%`;
const points = (x: number): string => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} points`;
/** a count of the totals (absent = 0) */
const of = (t: ArmTotals, name: Exclude<keyof ArmTotals, 'oh' | 'du' | 'sdu' | 'kinds'>): number => t[name] ?? 0;

/** Task-level figures of one arm; null throughout for an arm with no sessions. */
function taskFigures(a: ArmSamples, feedback: ReadonlyMap<string, TaskOutcome>) {
  const tasks = [...a.tasks];
  if (tasks.length === 0) return { turns: null, duration: null, cost: null, success: null, successN: 0, successK: 0, goodput: null, goodputK: 0 };
  let judged = 0;
  let won = 0;
  let goodRequests = 0;
  let requests = 0;
  let duration = 0;
  let cost = 0;
  for (const [key, t] of tasks) {
    requests += t.requests;
    duration += t.last + t.lastLatency - t.first;
    cost += t.cost;
    const said = feedback.get(key) ?? (t.session !== null ? feedback.get(feedbackKey('session', t.session)) : undefined);
    if (said === undefined) continue;
    judged++;
    if (said === 'success') {
      won++;
      goodRequests += t.requests;
    }
  }
  const mean = (sum: number) => round4(sum / tasks.length);
  return {
    turns: mean(requests),
    duration: mean(duration),
    cost: mean(cost),
    success: rate(won, judged),
    successN: judged,
    successK: won,
    // only meaningful once some task was judged: an unjudged arm is unmeasured, not zero
    goodput: judged === 0 ? null : rate(goodRequests, of(a.totals, 'sr')),
    goodputK: goodRequests,
  };
}

type PerArm<T> = { treatment: T; control: T; shadow?: T };

/** What judging needs: the samples, their tasks' feedback, and whether the breaker is armed. */
export type JudgeInput = Pick<ScorecardInput, 'skill' | 'samples' | 'feedback' | 'armed'>;

/**
 * The status and what crossed: tripwires (breakers, anomalies) and warnings.
 * The sweep acts on this alone; the scorecard shows it with the figures.
 */
export function judge(input: JudgeInput) {
  const { treatment: t, control: c, shadow: sh } = input.samples.arms;
  const [tn, cn, shn] = [of(t.totals, 'n'), of(c.totals, 'n'), of(sh.totals, 'n')];
  const total = tn + cn + shn;
  const tasks = { treatment: taskFigures(t, input.feedback), control: taskFigures(c, input.feedback), shadow: taskFigures(sh, input.feedback) };
  const share = (a: ArmTotals) => rate(of(a, 'sr'), of(a, 'n'));
  const shareT = share(t.totals);
  const shareC = share(c.totals);
  const confounded = shareT !== null && shareC !== null && Math.abs(shareT - shareC) > THRESHOLDS.sessionCoverageGap;
  // the fold's moves: what treatment and shadow reported (control never folds)
  const folds = of(t.totals, 'fold') + of(sh.totals, 'fold');
  const ledger = of(t.totals, 'led') + of(sh.totals, 'led');

  const measured = total >= MIN_SAMPLES;
  const comparing = cn > 0;
  const comparable = tn >= MIN_SAMPLES && cn >= MIN_SAMPLES;
  const breakers: Breaker[] = [];
  const anomalies: string[] = [];
  const warnings: string[] = [];
  const trip = (b: Breaker, text: string) => {
    breakers.push(b);
    anomalies.push(`${b} ${text}`);
  };

  if (measured) {
    const failOpen = (of(t.totals, 'fo') + of(c.totals, 'fo') + of(sh.totals, 'fo')) / total;
    if (failOpen > THRESHOLDS.failOpenRate) trip('fail_open_rate', `${pct(failOpen)} > ${pct(THRESHOLDS.failOpenRate)}`);
    const fidelity = rate(of(t.totals, 'fk'), of(t.totals, 'fc'));
    if (fidelity !== null && fidelity < THRESHOLDS.toolCallFidelity) trip('tool_call_fidelity', `${pct(fidelity)} < ${pct(THRESHOLDS.toolCallFidelity)} in treatment`);
    if (input.skill === FOLD_SKILL && folds >= THRESHOLDS.foldMovesMin && ledger < 0) trip('fold_ledger', `-$${(-ledger).toFixed(4)} over ${folds} folds < $0`);
  }
  if (comparable) {
    const tt = tasks.treatment;
    const tc = tasks.control;
    const turnsUp = tt.turns !== null && tc.turns !== null && tc.turns > 0 ? tt.turns / tc.turns - 1 : null;
    // task-level numbers of arms with different session coverage compare different traffic: shown, never acted on
    if (!confounded) {
      if (turnsUp !== null && turnsUp > THRESHOLDS.turnsUpTrip) trip('turns_per_task', `${signedPct(turnsUp)} > +${pct(THRESHOLDS.turnsUpTrip)} (treatment ${tt.turns}, control ${tc.turns})`);
      if (tt.success !== null && tc.success !== null && tt.success - tc.success < -THRESHOLDS.taskSuccessDrop) {
        trip('task_success', `${pct(tt.success)} vs control ${pct(tc.success)}: ${points(tt.success - tc.success)} < -${(THRESHOLDS.taskSuccessDrop * 100).toFixed(1)}`);
      }
      if (tt.goodput !== null && tc.goodput !== null && tt.goodput - tc.goodput < -THRESHOLDS.goodputDrop) {
        trip('goodput', `${pct(tt.goodput)} vs control ${pct(tc.goodput)}: ${points(tt.goodput - tc.goodput)} < -${(THRESHOLDS.goodputDrop * 100).toFixed(1)}`);
      }
      if (turnsUp !== null && turnsUp > THRESHOLDS.turnsUpWarn && turnsUp <= THRESHOLDS.turnsUpTrip) warnings.push(`turns_per_task ${signedPct(turnsUp)} (warning band +15% to +25%)`);
    }
    const errT = of(t.totals, 'err') / tn;
    const errC = of(c.totals, 'err') / cn;
    if (errT - errC > THRESHOLDS.upstreamErrorGap) warnings.push(`upstream_error_rate ${pct(errT)} vs control ${pct(errC)}: ${points(errT - errC)} > +5.0`);
    const retryT = of(t.totals, 'rt') / tn;
    const retryC = of(c.totals, 'rt') / cn;
    if (retryT > THRESHOLDS.retryRatio * retryC) warnings.push(`client_retry_rate ${pct(retryT)} > 2x control ${pct(retryC)}`);
  }

  const status: ScorecardStatus =
    !measured ? 'NO_DATA'
    : breakers.length > 0 ? (input.armed ? 'CIRCUIT_BREAKER_TRIGGERED' : 'BREAKER_ADVISORY')
    // a canary whose arms cannot be compared yet is unmeasured, never healthy
    : comparing && !comparable ? 'NO_DATA'
    : warnings.length > 0 ? 'REGRESSION_WARNING'
    : 'HEALTHY';
  return { status, breakers, anomalies, warnings, confounded, shareT, shareC, tasks, folds, ledger, sizes: { total, treatment: tn, control: cn, shadow: shn } };
}

export type Judgement = ReturnType<typeof judge>;

export function computeScorecard(input: ScorecardInput) {
  const { status, breakers, anomalies, warnings, confounded, shareT, shareC, tasks, folds, ledger, sizes } = judge(input);
  const { treatment: t, control: c, shadow: sh } = input.samples.arms;
  const withShadow = sizes.shadow > 0;
  const perArm = <T>(f: (a: ArmTotals, arm: ArmSamples) => T): PerArm<T> => ({
    treatment: f(t.totals, t),
    control: f(c.totals, c),
    ...(withShadow && { shadow: f(sh.totals, sh) }),
  });
  const rateOf = (k: Parameters<typeof of>[1], n: Parameters<typeof of>[1]) => perArm((a) => rate(of(a, k), of(a, n)));

  const wilsonOf = (k: Parameters<typeof of>[1], n: Parameters<typeof of>[1]) => perArm((a) => wilson(of(a, k), of(a, n)));
  const unitsT = t.units();
  const split: SplitCheck | null = input.canaryPercent === null ? null : splitCheck(unitsT, unitsT + c.units(), input.canaryPercent / 100);
  const task = (f: (x: ReturnType<typeof taskFigures>) => number | null): PerArm<number | null> => ({
    treatment: f(tasks.treatment),
    control: f(tasks.control),
    ...(withShadow && { shadow: f(tasks.shadow) }),
  });

  return {
    skill_id: input.skill,
    status,
    breaker_action: input.armed ? ('auto_rollback' as const) : ('advisory' as const),
    breakers,
    anomalies,
    warnings,
    confounded,
    confounded_reason: confounded ? `session_share_treatment=${shareT} control=${shareC}` : null,
    sample_size: { total: sizes.total, treatment: sizes.treatment, control: sizes.control, ...(withShadow && { shadow: sizes.shadow }) },
    generic_metrics: {
      overhead_ms: perArm((a) => spreadOf(a.oh)),
      duration_ms: perArm((a) => spreadOf(a.du)),
      upstream_error_rate: rateOf('err', 'n'),
      client_retry_rate: rateOf('rt', 'n'),
      fail_open_rate: rateOf('fo', 'n'),
    },
    downstream_ai_metrics: {
      turns_per_task: task((x) => x.turns),
      end_to_end_duration_ms: task((x) => x.duration),
      cost_per_task_usd: task((x) => x.cost),
      task_success_rate: task((x) => x.success),
      goodput: task((x) => x.goodput),
      session_share_treatment: shareT,
      session_share_control: shareC,
      task_sample_size: perArm((_, arm) => arm.tasks.size),
      tasks_with_feedback: task((x) => x.successN),
      single_call_metrics: {
        requests: perArm((a) => of(a, 'sn')),
        duration_ms: perArm((a) => spreadOf(a.sdu)),
        cost_per_call_usd: perArm((a) => (of(a, 'sn') === 0 ? null : round4(of(a, 'sc') / of(a, 'sn')))),
        upstream_error_rate: rateOf('se', 'sn'),
      },
      tool_call_fidelity: rateOf('fk', 'fc'),
      client_friction_rate: rateOf('fr', 'n'),
    },
    skill_specific_metrics: skillReports(input.skill, t.totals, sh.totals, { folds, trued_up: of(t.totals, 'ltu') + of(sh.totals, 'ltu'), net_usd: round4(ledger) }),
    // beside the status, never changing it: is a difference more than noise, is the split the configured one
    confidence_intervals: {
      upstream_error_rate: wilsonOf('err', 'n'),
      client_retry_rate: wilsonOf('rt', 'n'),
      fail_open_rate: wilsonOf('fo', 'n'),
      tool_call_fidelity: wilsonOf('fk', 'fc'),
      task_success_rate: { treatment: wilson(tasks.treatment.successK, tasks.treatment.successN), control: wilson(tasks.control.successK, tasks.control.successN) },
      goodput: { treatment: wilson(tasks.treatment.goodputK, of(t.totals, 'sr')), control: wilson(tasks.control.goodputK, of(c.totals, 'sr')) },
    },
    sample_ratio: split,
    deployment_history: input.history.slice(0, 20),
    source: input.source,
  };
}

export type Scorecard = ReturnType<typeof computeScorecard>;

/**
 * What the skills themselves reported (semantic cache, PII, routing,
 * compaction), where they did: acting figures from treatment, shadow
 * decisions and false-hit checks from treatment and shadow.
 */
function skillReports(skill: string, treatment: ArmTotals, shadow: ArmTotals, foldLedger: { folds: number; trued_up: number; net_usd: number }) {
  const both = (name: Parameters<typeof of>[1]) => of(treatment, name) + of(shadow, name);
  const t = (name: Parameters<typeof of>[1]) => of(treatment, name);
  const kinds = treatment.kinds ?? {};
  return {
    ...(t('lk') > 0 && { cache_hit_rate: rate(t('hit'), t('lk')) }),
    ...(of(shadow, 'wh') > 0 && { shadow_would_hit: of(shadow, 'wh') }),
    ...(both('fhc') > 0 && { false_hit_rate: rate(both('fh'), both('fhc')), false_hit_checked: both('fhc') }),
    ...(t('tkn') > 0 && { tokens_saved: t('tk') }),
    ...(t('usn') > 0 && { usd_saved: round4(t('us')) }),
    ...(Object.keys(kinds).length > 0 && { redactions_by_kind: kinds }),
    ...(skill === 'model_routing' && t('act') > 0 && { routed_share: rate(t('rtd'), t('act')) }),
    ...(skill === FOLD_SKILL && foldLedger.folds > 0 && { fold_ledger: foldLedger }),
  };
}
