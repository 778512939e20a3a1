import type { RowSkill, ScorecardRow } from './rows.js';
import { addValue, mergeSketch, type Sketch } from './sketch.js';

/**
 * What a scorecard is computed from: per arm, additive totals of the arm's
 * samples, and per task its own running figures. Everything here merges: the
 * samples of two sets of requests combined are the samples of their union, so
 * stores keep them per minute as requests finish (the durable store, in
 * Redis, summed by whichever replica served each request) and a read adds up
 * the minutes of its window instead of going over every request again.
 */

export type ArmName = 'treatment' | 'control' | 'shadow';
export const ARMS: readonly ArmName[] = ['treatment', 'control', 'shadow'];
export const isArm = (a: string): a is ArmName => a === 'treatment' || a === 'control' || a === 'shadow';

/**
 * Is this skill entry of a row a scorecard sample? Only for a skill the
 * scorecards read (`scored`: the per-key skills) and in one of their arms; the
 * guardrails' entry, on every request, is none. Both stores keep a row by it.
 */
export const isSample = (scored: ReadonlySet<string>, skill: string, s: RowSkill): s is RowSkill & { arm: ArmName } => isArm(s.arm) && scored.has(skill);

/**
 * Additive totals of one arm's samples, under short names (stores keep them
 * as JSON): counts and sums, percentile sketches, redaction kinds. A missing
 * figure is 0 (an empty sketch); merging adds figure by figure, sketches
 * bucket by bucket, kinds kind by kind (the Redis store's merge script does
 * the same).
 */
export interface ArmTotals {
  /** samples */
  n?: number;
  /** overhead_ms and latency_ms sketches */
  oh?: Sketch;
  du?: Sketch;
  /** upstream errors (status ≥ 500), client retries, failed open, client friction */
  err?: number;
  rt?: number;
  fo?: number;
  fr?: number;
  /** replies whose tool-call fidelity was measured, and those faithful */
  fc?: number;
  fk?: number;
  /** requests with a task (a session or task id), and requests without a session (each its own assignment unit) */
  sr?: number;
  ns?: number;
  /** requests without a task: count, latency sketch, cost, upstream errors */
  sn?: number;
  sdu?: Sketch;
  sc?: number;
  se?: number;
  /** what the skill reported, in treatment and shadow (control never acts): see SkillReports */
  act?: number;
  lk?: number;
  hit?: number;
  rtd?: number;
  wh?: number;
  fhc?: number;
  fh?: number;
  /** reports carrying tokens saved (count) and their sum; the same for dollars saved */
  tkn?: number;
  tk?: number;
  usn?: number;
  us?: number;
  /** fold moves reporting a net dollar ledger, and its sum; of them, those trued up from the reply's cache usage */
  fold?: number;
  led?: number;
  ltu?: number;
  kinds?: Record<string, number>;
}

/** One task's figures in one arm: requests, cost, first and last request times (ms) and the last one's latency. */
export interface TaskTotals {
  requests: number;
  cost: number;
  first: number;
  last: number;
  lastLatency: number;
  /** a task id's session (the first one seen), whose feedback stands in for the task's own; null for a session's task */
  session: string | null;
}

const SKETCHES: ReadonlySet<string> = new Set(['oh', 'du', 'sdu']);

/** Adds `b` into `a` figure by figure (sketches bucket by bucket, kinds kind by kind). */
export function addTotals(a: ArmTotals, b: ArmTotals): ArmTotals {
  const into = a as Record<string, number | Sketch | Record<string, number>>;
  const from = b as Record<string, number | Sketch | Record<string, number>>;
  // for-in over plain objects: a read adds up thousands of these
  for (const name in from) {
    const value = from[name]!;
    if (typeof value === 'number') into[name] = ((into[name] as number | undefined) ?? 0) + value;
    else if (SKETCHES.has(name)) into[name] = mergeSketch(into[name] as Sketch | undefined, value as Sketch);
    else {
      const map = (into[name] ??= {}) as Record<string, number>;
      for (const k in value) map[k] = (map[k] ?? 0) + (value as Record<string, number>)[k]!;
    }
  }
  return a;
}

/** Merges task figures: counts and costs add, the span widens, the latest request's latency wins. */
export function mergeTask(a: TaskTotals, b: TaskTotals): TaskTotals {
  a.requests += b.requests;
  a.cost += b.cost;
  a.first = Math.min(a.first, b.first);
  a.session ??= b.session;
  if (b.last >= a.last) {
    a.last = b.last;
    a.lastLatency = b.lastLatency;
  }
  return a;
}

/** The columns of a row that its samples are made of (the skill's own entry apart). */
export type SampleRow = Pick<
  ScorecardRow,
  'ts' | 'session_id' | 'task_id' | 'status' | 'latency_ms' | 'overhead_ms' | 'cost_usd' | 'tokens_saved' | 'retry' | 'relay_reason' | 'tool_fidelity'
>;

/** Outcomes of a skill stage that did not complete: the request failed open for that skill. */
const FAIL_OPEN_OUTCOMES: ReadonlySet<string> = new Set(['ceiling_exceeded', 'overloaded', 'loop_stalled', 'error']);

const bump = (t: ArmTotals, name: Exclude<keyof ArmTotals, 'oh' | 'du' | 'sdu' | 'kinds'>, by = 1): void => {
  t[name] = (t[name] ?? 0) + by;
};
const count = (t: ArmTotals, name: 'oh' | 'du' | 'sdu', value: number): void => {
  t[name] = addValue(t[name], value);
};

/** The id a task's feedback is filed under: a task id, else a session id (`POST /v1/feedback`). */
export const feedbackKey = (kind: 'task' | 'session', id: string): string => `${kind === 'task' ? 't' : 's'}:${id}`;
const SESSION_TASK = feedbackKey('session', '');

/** The task a row belongs to (by feedbackKey), or null for a single call. */
export const taskOf = (r: Pick<ScorecardRow, 'task_id' | 'session_id'>): string | null =>
  r.task_id !== null ? feedbackKey('task', r.task_id) : r.session_id !== null ? feedbackKey('session', r.session_id) : null;

/**
 * One arm's samples: totals, tasks by feedback key, and the sessions of
 * requests whose task is a task id (a session's own task already names it):
 * together with `ns` they are the arm's assignment units.
 */
export class ArmSamples {
  readonly totals: ArmTotals = {};
  readonly tasks = new Map<string, TaskTotals>();
  readonly sessions = new Set<string>();

  /** one request in which the skill had this arm, with the skill's outcome and report */
  addRow(r: SampleRow, outcome: string, detail: Readonly<Record<string, unknown>> | undefined, arm: ArmName): void {
    const t = this.totals;
    bump(t, 'n');
    if (r.overhead_ms !== null) count(t, 'oh', r.overhead_ms);
    count(t, 'du', r.latency_ms);
    const upstreamError = r.status >= 500;
    if (upstreamError) bump(t, 'err');
    if (r.retry) bump(t, 'rt');
    if (FAIL_OPEN_OUTCOMES.has(outcome) || r.relay_reason === 'fail_open') bump(t, 'fo');
    // friction: the client had to repeat the call, or was refused it
    if (r.retry || (r.status >= 400 && r.status < 500)) bump(t, 'fr');
    if (r.tool_fidelity !== null) {
      bump(t, 'fc');
      if (r.tool_fidelity) bump(t, 'fk');
    }
    if (r.session_id === null) bump(t, 'ns');
    if (arm !== 'control') addReport(t, arm, outcome, detail, r.tokens_saved);
    const task = taskOf(r);
    if (task === null) {
      bump(t, 'sn');
      count(t, 'sdu', r.latency_ms);
      bump(t, 'sc', r.cost_usd);
      if (upstreamError) bump(t, 'se');
      return;
    }
    bump(t, 'sr');
    if (r.task_id !== null && r.session_id !== null) this.sessions.add(r.session_id);
    const at = Date.parse(r.ts);
    this.addTask(task, { requests: 1, cost: r.cost_usd, first: at, last: at, lastLatency: r.latency_ms, session: r.task_id !== null ? r.session_id : null });
  }

  addTask(key: string, t: TaskTotals): void {
    const known = this.tasks.get(key);
    if (known === undefined) this.tasks.set(key, { ...t });
    else mergeTask(known, t);
  }

  merge(other: ArmSamples): void {
    addTotals(this.totals, other.totals);
    for (const [key, t] of other.tasks) this.addTask(key, t);
    for (const s of other.sessions) this.sessions.add(s);
  }

  /** assignment units (the canary draws by session, else by request): distinct sessions plus requests without one */
  units(): number {
    const sessions = new Set(this.sessions);
    for (const key of this.tasks.keys()) if (key.startsWith(SESSION_TASK)) sessions.add(key.slice(SESSION_TASK.length));
    return sessions.size + (this.totals.ns ?? 0);
  }
}

/** What a skill reported on a request in treatment or shadow, into the arm's totals (see SkillReports for how they read). */
function addReport(t: ArmTotals, arm: 'treatment' | 'shadow', outcome: string, detail: Readonly<Record<string, unknown>> | undefined, rowTokensSaved: number): void {
  if (arm === 'treatment') {
    bump(t, 'act');
    if (outcome === 'hit' || outcome === 'miss') bump(t, 'lk');
    if (outcome === 'hit') bump(t, 'hit');
    if (outcome === 'applied') bump(t, 'rtd');
  }
  if (detail === undefined) return;
  if (arm === 'shadow' && detail['decision'] === 'hit') bump(t, 'wh');
  if (typeof detail['false_hit'] === 'boolean') {
    bump(t, 'fhc');
    if (detail['false_hit']) bump(t, 'fh');
  }
  const ledger = detail['ledger_usd'];
  if (typeof ledger === 'number') {
    bump(t, 'fold');
    bump(t, 'led', ledger);
    if (detail['ledger_trued_up'] === true) bump(t, 'ltu');
  }
  if (arm !== 'treatment') return;
  const tokens = detail['tokens_saved'];
  if (typeof tokens === 'number' || (outcome === 'hit' && rowTokensSaved > 0)) {
    bump(t, 'tkn');
    bump(t, 'tk', typeof tokens === 'number' ? tokens : rowTokensSaved);
  }
  const usd = detail['usd_saved'];
  if (typeof usd === 'number') {
    bump(t, 'usn');
    bump(t, 'us', usd);
  }
  const kinds = detail['kinds'];
  if (typeof kinds === 'object' && kinds !== null) {
    const into = (t.kinds ??= {});
    for (const [k, v] of Object.entries(kinds)) if (typeof v === 'number') into[k] = (into[k] ?? 0) + v;
  }
}

/** One skill's samples over some requests, per arm. */
export class SkillSamples {
  readonly arms: Record<ArmName, ArmSamples> = { treatment: new ArmSamples(), control: new ArmSamples(), shadow: new ArmSamples() };

  /** a request, when the skill had an arm in it (rows without one are not samples) */
  addRow(r: ScorecardRow, skill: string): void {
    const s = r.skills[skill];
    if (s !== undefined && isArm(s.arm)) this.arms[s.arm].addRow(r, s.outcome, s.detail, s.arm);
  }

  merge(other: SkillSamples): void {
    for (const arm of ARMS) this.arms[arm].merge(other.arms[arm]);
  }

  /** the feedback keys a task's outcome may be filed under (its own, and a task id's session), for the outcomes lookup */
  feedbackKeys(): string[] {
    const out = new Set<string>();
    for (const arm of ARMS) {
      for (const [key, t] of this.arms[arm].tasks) {
        out.add(key);
        if (t.session !== null) out.add(feedbackKey('session', t.session));
      }
    }
    return [...out];
  }
}
