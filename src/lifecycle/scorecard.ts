import type { TransitionRecord } from '../tenancy/skills.js';
import type { ScorecardRow, StoreKind } from './rows.js';
import { percentile, round4, splitCheck, wilson, type SplitCheck } from './stats.js';

/**
 * The scorecard of one skill over a window of rows: treatment against control,
 * computed on every read and never stored (docs/api.md, Scorecard). Pure: rows,
 * task feedback and transitions in, the scorecard object out.
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

/** Outcomes of a skill stage that did not complete: the request failed open for that skill. */
const FAIL_OPEN_OUTCOMES: ReadonlySet<string> = new Set(['ceiling_exceeded', 'overloaded', 'loop_stalled', 'error']);
const FOLD_SKILL = 'agent_trajectory_compaction';
type ArmName = 'treatment' | 'control' | 'shadow';
const isArm = (a: string): a is ArmName => a === 'treatment' || a === 'control' || a === 'shadow';

/** The id feedback is filed under: a task id, else a session id (`POST /v1/feedback`). */
export const feedbackKey = (kind: 'task' | 'session', id: string): string => `${kind === 'task' ? 't' : 's'}:${id}`;

/** The feedback ids a set of rows may have outcomes under (for a store lookup before computing). */
export function feedbackKeys(rows: Iterable<ScorecardRow>): string[] {
  const out = new Set<string>();
  for (const r of rows) {
    if (r.task_id !== null) out.add(feedbackKey('task', r.task_id));
    if (r.session_id !== null) out.add(feedbackKey('session', r.session_id));
  }
  return [...out];
}

export interface ScorecardInput {
  skill: string;
  rows: Iterable<ScorecardRow>;
  /** task outcomes by feedbackKey() */
  feedback: ReadonlyMap<string, TaskOutcome>;
  /** auto-rollback is armed for this skill (GW_SKILL_AUTO_ROLLBACK) */
  armed: boolean;
  /** newest first; the last 20 are shown */
  history: readonly TransitionRecord[];
  /** the configured canary percent, for the split check; null when not one canary */
  canaryPercent: number | null;
  source: { store: StoreKind } & Record<string, unknown>;
}

interface Task {
  requests: number;
  cost: number;
  /** ISO times compare as strings: parsed once per task, not once per row */
  first: string;
  last: string;
  /** latency of the row at `last` */
  lastLatency: number;
  outcome: TaskOutcome | undefined;
}

/** Running figures of one arm. */
class ArmFigures {
  n = 0;
  readonly overhead: number[] = [];
  readonly duration: number[] = [];
  upstreamErrors = 0;
  retries = 0;
  failOpen = 0;
  friction = 0;
  fidelityChecked = 0;
  fidelityOk = 0;
  sessionRows = 0;
  readonly tasks = new Map<string, Task>();
  readonly units = new Set<string>();
  single = { n: 0, duration: [] as number[], cost: 0, upstreamErrors: 0 };

  add(r: ScorecardRow, outcome: string, feedback: ReadonlyMap<string, TaskOutcome>): void {
    this.n++;
    if (r.overhead_ms !== null) this.overhead.push(r.overhead_ms);
    this.duration.push(r.latency_ms);
    const upstreamError = r.status >= 500;
    if (upstreamError) this.upstreamErrors++;
    if (r.retry) this.retries++;
    if (FAIL_OPEN_OUTCOMES.has(outcome) || r.relay_reason === 'fail_open') this.failOpen++;
    // friction: the client had to repeat the call, or was refused it
    if (r.retry || (r.status >= 400 && r.status < 500)) this.friction++;
    if (r.tool_fidelity !== null) {
      this.fidelityChecked++;
      if (r.tool_fidelity) this.fidelityOk++;
    }
    this.units.add(r.session_id ?? r.request_id);
    const taskKey = r.task_id !== null ? feedbackKey('task', r.task_id) : r.session_id !== null ? feedbackKey('session', r.session_id) : null;
    if (taskKey === null) {
      this.single.n++;
      this.single.duration.push(r.latency_ms);
      this.single.cost += r.cost_usd;
      if (upstreamError) this.single.upstreamErrors++;
      return;
    }
    this.sessionRows++;
    const task = this.tasks.get(taskKey);
    if (task === undefined) {
      const said = feedback.get(taskKey) ?? (r.session_id !== null ? feedback.get(feedbackKey('session', r.session_id)) : undefined);
      this.tasks.set(taskKey, { requests: 1, cost: r.cost_usd, first: r.ts, last: r.ts, lastLatency: r.latency_ms, outcome: said });
    } else {
      task.requests++;
      task.cost += r.cost_usd;
      if (r.ts < task.first) task.first = r.ts;
      if (r.ts > task.last) {
        task.last = r.ts;
        task.lastLatency = r.latency_ms;
      }
    }
  }
}

const rate = (k: number, n: number): number | null => (n === 0 ? null : round4(k / n));
const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;
const signedPct = (x: number): string => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}%`;
const points = (x: number): string => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} points`;

function spread(values: number[]) {
  // a typed array sorts numerically without a comparator call per pair
  const sorted = Float64Array.from(values).sort();
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99) };
}

/** Task-level figures of one arm; null throughout for an arm with no sessions. */
function taskFigures(a: ArmFigures) {
  const tasks = [...a.tasks.values()];
  if (tasks.length === 0) return { turns: null, duration: null, cost: null, success: null, successN: 0, successK: 0, goodput: null, goodputK: 0 };
  const judged = tasks.filter((t) => t.outcome !== undefined);
  const won = judged.filter((t) => t.outcome === 'success');
  const goodRequests = won.reduce((n, t) => n + t.requests, 0);
  const mean = (f: (t: Task) => number) => round4(tasks.reduce((n, t) => n + f(t), 0) / tasks.length);
  return {
    turns: mean((t) => t.requests),
    duration: mean((t) => Date.parse(t.last) + t.lastLatency - Date.parse(t.first)),
    cost: mean((t) => t.cost),
    success: rate(won.length, judged.length),
    successN: judged.length,
    successK: won.length,
    // only meaningful once some task was judged: an unjudged arm is unmeasured, not zero
    goodput: judged.length === 0 ? null : rate(goodRequests, a.sessionRows),
    goodputK: goodRequests,
  };
}

type PerArm<T> = { treatment: T; control: T; shadow?: T };

export function computeScorecard(input: ScorecardInput) {
  const arms: Record<ArmName, ArmFigures> = { treatment: new ArmFigures(), control: new ArmFigures(), shadow: new ArmFigures() };
  let folds = 0;
  let ledger = 0;
  const specific = new SkillSpecific(input.skill);
  for (const r of input.rows) {
    const s = r.skills[input.skill];
    if (s === undefined || !isArm(s.arm)) continue;
    arms[s.arm].add(r, s.outcome, input.feedback);
    const entry = s.detail?.['ledger_usd'];
    if (input.skill === FOLD_SKILL && typeof entry === 'number' && s.arm !== 'control') {
      folds++;
      ledger += entry;
    }
    specific.add(s.arm, s.outcome, s.detail, r);
  }
  const { treatment: t, control: c, shadow: sh } = arms;
  const total = t.n + c.n + sh.n;
  const withShadow = sh.n > 0;
  const perArm = <T>(f: (a: ArmFigures) => T): PerArm<T> => ({ treatment: f(t), control: f(c), ...(withShadow && { shadow: f(sh) }) });

  const tasks = { treatment: taskFigures(t), control: taskFigures(c), shadow: taskFigures(sh) };
  const share = (a: ArmFigures) => rate(a.sessionRows, a.n);
  const shareT = share(t);
  const shareC = share(c);
  const confounded = shareT !== null && shareC !== null && Math.abs(shareT - shareC) > THRESHOLDS.sessionCoverageGap;

  const measured = total >= MIN_SAMPLES;
  const comparing = c.n > 0;
  const comparable = t.n >= MIN_SAMPLES && c.n >= MIN_SAMPLES;
  const breakers: Breaker[] = [];
  const anomalies: string[] = [];
  const warnings: string[] = [];
  const trip = (b: Breaker, text: string) => {
    breakers.push(b);
    anomalies.push(`${b} ${text}`);
  };

  if (measured) {
    const failOpen = (t.failOpen + c.failOpen + sh.failOpen) / total;
    if (failOpen > THRESHOLDS.failOpenRate) trip('fail_open_rate', `${pct(failOpen)} > ${pct(THRESHOLDS.failOpenRate)}`);
    const fidelity = rate(t.fidelityOk, t.fidelityChecked);
    if (fidelity !== null && fidelity < THRESHOLDS.toolCallFidelity) trip('tool_call_fidelity', `${pct(fidelity)} < ${pct(THRESHOLDS.toolCallFidelity)} in treatment`);
    if (folds >= THRESHOLDS.foldMovesMin && ledger < 0) trip('fold_ledger', `-$${(-ledger).toFixed(4)} over ${folds} folds < $0`);
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
    const errT = t.upstreamErrors / t.n;
    const errC = c.upstreamErrors / c.n;
    if (errT - errC > THRESHOLDS.upstreamErrorGap) warnings.push(`upstream_error_rate ${pct(errT)} vs control ${pct(errC)}: ${points(errT - errC)} > +5.0`);
    const retryT = t.retries / t.n;
    const retryC = c.retries / c.n;
    if (retryT > THRESHOLDS.retryRatio * retryC) warnings.push(`client_retry_rate ${pct(retryT)} > 2x control ${pct(retryC)}`);
  }

  const status: ScorecardStatus =
    !measured ? 'NO_DATA'
    : breakers.length > 0 ? (input.armed ? 'CIRCUIT_BREAKER_TRIGGERED' : 'BREAKER_ADVISORY')
    // a canary whose arms cannot be compared yet is unmeasured, never healthy
    : comparing && !comparable ? 'NO_DATA'
    : warnings.length > 0 ? 'REGRESSION_WARNING'
    : 'HEALTHY';

  const wilsonOf = (k: (a: ArmFigures) => number, n: (a: ArmFigures) => number) => perArm((a) => wilson(k(a), n(a)));
  const split: SplitCheck | null = input.canaryPercent === null ? null : splitCheck(t.units.size, t.units.size + c.units.size, input.canaryPercent / 100);
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
    sample_size: { total, treatment: t.n, control: c.n, ...(withShadow && { shadow: sh.n }) },
    generic_metrics: {
      overhead_ms: perArm((a) => spread(a.overhead)),
      duration_ms: perArm((a) => spread(a.duration)),
      upstream_error_rate: perArm((a) => rate(a.upstreamErrors, a.n)),
      client_retry_rate: perArm((a) => rate(a.retries, a.n)),
      fail_open_rate: perArm((a) => rate(a.failOpen, a.n)),
    },
    downstream_ai_metrics: {
      turns_per_task: task((x) => x.turns),
      end_to_end_duration_ms: task((x) => x.duration),
      cost_per_task_usd: task((x) => x.cost),
      task_success_rate: task((x) => x.success),
      goodput: task((x) => x.goodput),
      session_share_treatment: shareT,
      session_share_control: shareC,
      task_sample_size: perArm((a) => a.tasks.size),
      tasks_with_feedback: task((x) => x.successN),
      single_call_metrics: {
        requests: perArm((a) => a.single.n),
        duration_ms: perArm((a) => spread(a.single.duration)),
        cost_per_call_usd: perArm((a) => (a.single.n === 0 ? null : round4(a.single.cost / a.single.n))),
        upstream_error_rate: perArm((a) => rate(a.single.upstreamErrors, a.single.n)),
      },
      tool_call_fidelity: perArm((a) => rate(a.fidelityOk, a.fidelityChecked)),
      client_friction_rate: perArm((a) => rate(a.friction, a.n)),
    },
    skill_specific_metrics: specific.result(input.skill === FOLD_SKILL ? { folds, net_usd: round4(ledger) } : undefined),
    // beside the status, never changing it: is a difference more than noise, is the split the configured one
    confidence_intervals: {
      upstream_error_rate: wilsonOf((a) => a.upstreamErrors, (a) => a.n),
      client_retry_rate: wilsonOf((a) => a.retries, (a) => a.n),
      fail_open_rate: wilsonOf((a) => a.failOpen, (a) => a.n),
      tool_call_fidelity: wilsonOf((a) => a.fidelityOk, (a) => a.fidelityChecked),
      task_success_rate: { treatment: wilson(tasks.treatment.successK, tasks.treatment.successN), control: wilson(tasks.control.successK, tasks.control.successN) },
      goodput: { treatment: wilson(tasks.treatment.goodputK, t.sessionRows), control: wilson(tasks.control.goodputK, c.sessionRows) },
    },
    sample_ratio: split,
    deployment_history: input.history.slice(0, 20),
    source: input.source,
  };
}

export type Scorecard = ReturnType<typeof computeScorecard>;

/** What the skills themselves reported, summed where present (semantic cache, PII, routing, compaction). */
class SkillSpecific {
  constructor(private readonly skill: string) {}

  private acted = 0;
  private hits = 0;
  private lookups = 0;
  private shadowWouldHit = 0;
  private falseHits = 0;
  private falseHitChecked = 0;
  private tokensSaved = 0;
  private usdSaved = 0;
  private routed = 0;
  private readonly kinds = new Map<string, number>();
  private sawTokens = false;
  private sawUsd = false;

  add(arm: string, outcome: string, detail: Readonly<Record<string, unknown>> | undefined, row: ScorecardRow): void {
    if (arm === 'control') return;
    if (arm === 'treatment') {
      this.acted++;
      if (outcome === 'hit' || outcome === 'miss') this.lookups++;
      if (outcome === 'hit') this.hits++;
      if (outcome === 'applied') this.routed++;
    }
    if (detail === undefined) return;
    const decision = detail['decision'];
    if (arm === 'shadow' && decision === 'hit') this.shadowWouldHit++;
    if (typeof detail['false_hit'] === 'boolean') {
      this.falseHitChecked++;
      if (detail['false_hit']) this.falseHits++;
    }
    if (arm !== 'treatment') return;
    const tokens = detail['tokens_saved'];
    if (typeof tokens === 'number') {
      this.sawTokens = true;
      this.tokensSaved += tokens;
    } else if (outcome === 'hit' && row.tokens_saved > 0) {
      this.sawTokens = true;
      this.tokensSaved += row.tokens_saved;
    }
    const usd = detail['usd_saved'];
    if (typeof usd === 'number') {
      this.sawUsd = true;
      this.usdSaved += usd;
    }
    const kinds = detail['kinds'];
    if (typeof kinds === 'object' && kinds !== null) {
      for (const [k, v] of Object.entries(kinds)) if (typeof v === 'number') this.kinds.set(k, (this.kinds.get(k) ?? 0) + v);
    }
  }

  result(foldLedger: { folds: number; net_usd: number } | undefined) {
    return {
      ...(this.lookups > 0 && { cache_hit_rate: rate(this.hits, this.lookups) }),
      ...(this.shadowWouldHit > 0 && { shadow_would_hit: this.shadowWouldHit }),
      ...(this.falseHitChecked > 0 && { false_hit_rate: rate(this.falseHits, this.falseHitChecked), false_hit_checked: this.falseHitChecked }),
      ...(this.sawTokens && { tokens_saved: this.tokensSaved }),
      ...(this.sawUsd && { usd_saved: round4(this.usdSaved) }),
      ...(this.kinds.size > 0 && { redactions_by_kind: Object.fromEntries(this.kinds) }),
      ...(this.skill === 'model_routing' && this.acted > 0 && { routed_share: rate(this.routed, this.acted) }),
      ...(foldLedger && foldLedger.folds > 0 && { fold_ledger: foldLedger }),
    };
  }
}
