import { GatewayError } from '../errors.js';
import type { SkillId, StoredMode } from '../tenancy/skills.js';
import { armFor, type Arm } from './arms.js';
import type { SkillPool, StageRun } from './pool.js';
import type { ReplyTap } from '../pipeline/types.js';
import { FAIL_OPEN_OUTCOMES, STARTED_SLOT_INTS, type Outcome, type StageAnswer, type StageContext, type StageResult } from './stage.js';
import { guardrailMode, inRunOrder, SKILLS, type SkillRow } from './table.js';

/**
 * The skill engine: decides each stage's mode and arm for one request, runs
 * the acting stages in table order (each on the body the previous one
 * produced), starts the shadow stages that may run beside the upstream call,
 * and turns the outcomes into one verdict. It never throws for a stage's
 * failure: a failed acting stage is a bypass (the caller's original bytes go
 * straight to the provider).
 */

/** The key's modes, read from the in-process mirror (KeySkills implements it): no store round trip. */
export interface ModeSource {
  effectiveMode(keyId: string, skill: SkillId): StoredMode;
}

export interface EngineSettings {
  GW_SKILL_CEILING_ACTING_MS: number;
  GW_SKILL_CEILING_SHADOW_MS: number;
  GW_GUARDRAILS_MODEL_MODE: 'shadow' | 'enforce' | 'off';
}

export interface SkillsRequest {
  surface: string;
  /** the caller's original bytes; never modified (a bypass sends them as they are) */
  body: Uint8Array;
  keyId: string;
  /** the request's validated overrides (`x-gw-skills`, `skill_overrides`): they replace the key's stored mode */
  overrides?: Partial<Record<SkillId, 'off' | 'shadow' | 'prod'>>;
  sessionId?: string;
  requestId: string;
  /** the main thread's facts for the stages whose row asks for them (`context: true`); built once, when the first such stage runs */
  context?: () => StageContext;
  /**
   * the reply itself reports every stage (the native envelope's trace): its
   * shadow stages run before dispatch, at the end of the task the request
   * waits for, whatever the body's size, so the reply says what they would
   * have done instead of finding them still running beside the call
   */
  shadowInReply?: boolean;
  /** the main-thread half of a stage that has one (the semantic cache's store, the PII restorer), made for this request when the stage runs */
  half?: (stage: string, acting: boolean) => StageHalf | undefined;
}

/**
 * A stage's main-thread half: what the worker cannot do (reach the cache
 * store, hold the reply). It finishes the worker's result and may tap the reply.
 */
export interface StageHalf {
  /**
   * The worker's result (undefined: the stage did not complete) with the
   * model as the acting stages before it left it; returns the stage's result.
   */
  finish(result: StageResult | undefined, model: string | undefined): StageResult | undefined | Promise<StageResult | undefined>;
  /** its hold on the reply, once it has one (a shadow stage beside dispatch has it before it runs) */
  readonly tap?: ReplyTap;
}

/** One stage as the trace, the headers, the row and the decision record report it. */
export interface SkillReport {
  skill: string;
  mode: StoredMode;
  arm: Arm;
  outcome: Outcome;
  /** wall time on the main thread, queue wait included */
  ms: number;
  detail?: Record<string, unknown>;
}

export type SkillsVerdict =
  /** go on to dispatch; with `body` and/or `model` when an acting stage changed them, else with the caller's bytes */
  | { kind: 'continue'; body?: Buffer; model?: string }
  /** answer the caller now; nothing goes upstream */
  | { kind: 'answer'; answer: StageAnswer }
  | { kind: 'refuse'; error: GatewayError }
  /** relay the caller's original bytes directly (served by direct_passthrough); `reason` is the row's error_detail */
  | { kind: 'bypass'; reason: string };

export interface SkillsRun {
  verdict: SkillsVerdict;
  /** the stages' taps on the reply, in run order (the dispatched reply, or an answer, is written through them) */
  taps: ReplyTap[];
  /** the stages run before dispatch (acting, control, inline shadow), in order */
  skills: SkillReport[];
  /** shadow stages run beside dispatch: settles within their ceiling (plus the abort grace), never rejects */
  beside: Promise<SkillReport[]>;
}

interface PlannedStage {
  row: SkillRow;
  mode: StoredMode;
  arm: Arm;
  slot: number;
}

/**
 * One request's shared memory: a started flag per stage, then the caller's
 * body, copied once and read in place by every stage's worker.
 */
class RequestMemory {
  readonly flags: Int32Array;
  readonly body: Uint8Array;

  constructor(body: Uint8Array, stages: number) {
    const flagBytes = stages * STARTED_SLOT_INTS * Int32Array.BYTES_PER_ELEMENT;
    const sab = new SharedArrayBuffer(flagBytes + body.byteLength);
    this.flags = new Int32Array(sab, 0, stages * STARTED_SLOT_INTS);
    this.body = new Uint8Array(sab, flagBytes, body.byteLength);
    this.body.set(body);
  }

  flag(slot: number): Int32Array {
    return this.flags.subarray(slot * STARTED_SLOT_INTS, (slot + 1) * STARTED_SLOT_INTS);
  }
}

/**
 * Bodies up to this size carry their beside-dispatch shadow stages in the
 * last inline stage's task. Measured on the guardrails' classifier: about
 * 5 µs on a short prompt and 60 µs at 1 KB, growing with the text, against
 * 50-100 µs of CPU and latency for a pool round trip of its own.
 */
const RIDE_MAX_BYTES = 1024;

const round = (ms: number) => Math.round(ms * 100) / 100;
const asBuffer = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
const NO_BESIDE: Promise<SkillReport[]> = Promise.resolve([]);
const NO_TAPS: ReplyTap[] = [];

/** One request's run: its shared memory, its context (once), and the halves of the stages that run. */
class RequestRun {
  private ctx: StageContext | undefined;
  private readonly halves = new Map<PlannedStage, StageHalf>();

  constructor(
    readonly req: SkillsRequest,
    readonly memory: RequestMemory,
  ) {}

  /** the context of a task whose stages include one that asks for it */
  context(stages: readonly PlannedStage[]): StageContext | undefined {
    if (this.req.context === undefined || !stages.some((s) => s.row.context === true)) return undefined;
    return (this.ctx ??= this.req.context());
  }

  /** makes the half of a stage about to run (or to run beside dispatch) */
  open(stage: PlannedStage, acting: boolean): void {
    const half = this.req.half?.(stage.row.id, acting);
    if (half) this.halves.set(stage, half);
  }

  /** A stage's run finished by its half (its time counts in the stage's); a half that throws is the stage's error. */
  async finish(stage: PlannedStage, run: StageRun, model: string | undefined): Promise<StageRun> {
    const half = this.halves.get(stage);
    if (half === undefined) return run;
    const result = run.outcome === 'done' ? run.reply.result : undefined;
    const t0 = performance.now();
    try {
      const finished = await half.finish(result, model);
      if (run.outcome !== 'done' || finished === undefined) return run;
      return { ...run, reply: { ...run.reply, result: finished }, ms: run.ms + (performance.now() - t0) };
    } catch (err) {
      return { outcome: 'error', detail: `main-thread half: ${err instanceof Error ? err.message : String(err)}`, ms: run.ms + (performance.now() - t0) };
    }
  }

  hasHalf(stage: PlannedStage): boolean {
    return this.halves.has(stage);
  }

  /** the stages that will not run now or whose results are not used (the request ended before dispatch): their halves learn so, and keep no tap */
  abandon(stages: readonly PlannedStage[], model: string | undefined): void {
    for (const s of stages) {
      void Promise.resolve(this.halves.get(s)?.finish(undefined, model)).catch(() => undefined);
      this.halves.delete(s);
    }
  }

  /** the taps in table order, whenever each half was made: a later stage's tap sees the reply first (the cache keeps it before PII restores it) */
  taps(): ReplyTap[] {
    if (this.halves.size === 0) return NO_TAPS;
    const out: Array<[number, ReplyTap]> = [];
    for (const [stage, h] of this.halves) if (h.tap) out.push([stage.slot, h.tap]);
    return out.sort((a, b) => a[0] - b[0]).map(([, tap]) => tap);
  }
}

export class SkillEngine {
  private readonly rows: SkillRow[];

  constructor(
    private readonly deps: {
      pool: SkillPool;
      modes: ModeSource;
      settings: EngineSettings;
      rows?: readonly SkillRow[];
      /** while true, shadow stages are not run (outcome `overloaded`): shadow work is shed before any request is (LoadMonitor.shouldShedShadow) */
      shedShadow?: () => boolean;
    },
  ) {
    this.rows = inRunOrder(deps.rows ?? SKILLS);
  }

  /** no stage can run on any request (an empty skills table): the skills stage need not call the engine */
  get idle(): boolean {
    return this.rows.length === 0;
  }

  private modeOf(row: SkillRow, req: SkillsRequest): StoredMode {
    if (row.kind === 'per-key') return req.overrides?.[row.id] ?? this.deps.modes.effectiveMode(req.keyId, row.id);
    return row.modeSetting === undefined ? 'prod' : guardrailMode(this.deps.settings[row.modeSetting]);
  }

  /** The stages that run for this request, with their modes and arms (off and rolled_back ones left out). */
  plan(req: SkillsRequest): PlannedStage[] {
    const out: PlannedStage[] = [];
    for (const row of this.rows) {
      const mode = this.modeOf(row, req);
      const arm = armFor(row.id, mode, req.sessionId, req.requestId);
      if (arm !== null) out.push({ row, mode, arm, slot: out.length });
    }
    return out;
  }

  async run(req: SkillsRequest): Promise<SkillsRun> {
    const plan = this.plan(req);
    if (plan.length === 0) return { verdict: { kind: 'continue' }, taps: NO_TAPS, skills: [], beside: NO_BESIDE };
    const memory = new RequestMemory(req.body, plan.length);
    const r = new RequestRun(req, memory);
    const skills: SkillReport[] = [];
    const inline: PlannedStage[] = [];
    const later: PlannedStage[] = [];
    for (const stage of plan) {
      if (stage.arm === 'control') skills.push({ skill: stage.row.id, mode: stage.mode, arm: stage.arm, outcome: 'skipped', ms: 0 });
      // shadow work is shed before any request is: reported, never a bypass
      else if (stage.arm === 'shadow' && this.deps.shedShadow?.()) {
        skills.push({ skill: stage.row.id, mode: stage.mode, arm: stage.arm, outcome: 'overloaded', ms: 0, detail: { reason: 'shadow work is shed while the replica is loaded' } });
      } else if (stage.arm === 'shadow' && stage.row.shadowBesideDispatch) later.push(stage);
      else inline.push(stage);
    }
    // on a small body the shadow stages beside dispatch ride at the end of the last task before dispatch: their work is
    // shorter than a round trip of their own; on a larger one it is not, and they start beside the upstream call
    const shadowCeiling = this.deps.settings.GW_SKILL_CEILING_SHADOW_MS;
    const riders = inline.length > 0 && shadowCeiling > 0 && (req.body.byteLength <= RIDE_MAX_BYTES || req.shadowInReply === true) ? later.splice(0) : [];
    // the shadow stages beside dispatch have their halves (and taps on the reply) before the call goes upstream
    for (const s of riders) r.open(s, false);
    for (const s of later) r.open(s, false);
    let body = memory.body;
    let changed = false;
    let model: string | undefined;
    // on a small body the stages the request waits for run in one pool task, each on the body the acting ones before it
    // produced: their work is shorter than the round trips it saves. On a larger one each has a task of its own, so a
    // stage's ceiling bounds its own wait for a thread (one task's wait would all fall on its first stage's ceiling).
    // Their main-thread halves finish in table order, so a cache lookup sees the model the stages before it chose.
    for (const s of inline) r.open(s, s.arm === 'treatment');
    const groups: PlannedStage[][] = inline.length === 0 ? [] : req.body.byteLength <= RIDE_MAX_BYTES ? [inline] : inline.map((s) => [s]);
    let ridden: Array<[PlannedStage, StageRun]> = [];
    let k = -1;
    for (const [g, group] of groups.entries()) {
      const task = g === groups.length - 1 ? [...group, ...riders] : group;
      const runs = await this.runTask(task, r, body, false);
      if (task.length > group.length) ridden = riders.map((f, i) => [f, runs[group.length + i]!]);
      for (let j = 0; j < group.length; j++) {
        const stage = group[j]!;
        k++;
        const acting = stage.arm === 'treatment';
        const run = await r.finish(stage, runs[j]!, model);
        const report = this.report(stage, run, acting);
        skills.push(report);
        // the stages that will not run now: built only when the request stops here
        const unfinished = () => [...inline.slice(k + 1), ...riders, ...later];
        if (FAIL_OPEN_OUTCOMES.has(report.outcome)) {
          // a shadow stage may be abandoned alone while nothing has changed the request yet
          if (!acting && !changed) continue;
          const cause = this.causeOf(task, runs, j, report, skills);
          r.abandon(unfinished(), model);
          return { verdict: { kind: 'bypass', reason: `${cause.skill}: ${cause.outcome}${reasonOf(cause)}` }, taps: NO_TAPS, skills, beside: NO_BESIDE };
        }
        const result = run.outcome === 'done' ? run.reply.result : undefined;
        if (!acting || result === undefined) continue;
        if (result.refuse) {
          const { type, message, fields } = result.refuse;
          r.abandon(unfinished(), model);
          return { verdict: { kind: 'refuse', error: new GatewayError(type, message, fields ? { fields } : {}) }, taps: NO_TAPS, skills, beside: NO_BESIDE };
        }
        // an answer is written through the taps of the stages before it (the caller's values restored)
        if (result.answer) {
          r.abandon(unfinished(), model);
          return { verdict: { kind: 'answer', answer: result.answer }, taps: r.taps(), skills, beside: NO_BESIDE };
        }
        if (result.change?.body !== undefined) {
          body = result.change.body;
          changed = true;
        }
        if (result.change?.model !== undefined) {
          model = result.change.model;
          changed = true;
        }
      }
    }

    const beside = later.length === 0 ? this.riddenReports(r, ridden, model) : this.besideReports(r, later, body, model);
    const verdict: SkillsVerdict = changed ? { kind: 'continue', ...(body !== memory.body && { body: asBuffer(body) }), ...(model !== undefined && { model }) } : { kind: 'continue' };
    return { verdict, taps: r.taps(), skills, beside };
  }

  /** the riders' reports: at once, unless a rider has a main-thread half, which finishes beside dispatch */
  private riddenReports(r: RequestRun, ridden: ReadonlyArray<[PlannedStage, StageRun]>, model: string | undefined): Promise<SkillReport[]> {
    if (ridden.length === 0) return NO_BESIDE;
    if (!ridden.some(([s]) => r.hasHalf(s))) return Promise.resolve(ridden.map(([s, run]) => this.report(s, run, false)));
    return Promise.all(ridden.map(async ([s, run]) => this.report(s, await r.finish(s, run, model), false)));
  }

  /**
   * The shadow stages beside dispatch, in one task: the first stage's, with
   * the others following it on the same thread. A round trip of its own per
   * stage (a thread wake-up, two messages and the loop's wake-up) costs more
   * than most shadow decisions, and five of them at once filled the pool.
   */
  private async besideReports(r: RequestRun, stages: readonly PlannedStage[], body: Uint8Array, model: string | undefined): Promise<SkillReport[]> {
    const runs = await this.runTask(stages, r, body, true);
    return this.riddenReports(
      r,
      stages.map((s, i) => [s, runs[i]!]),
      model,
    );
  }

  /** Stages in one pool task, in order: the first is the task's own, the others follow it on the same thread. */
  private runTask(stages: readonly PlannedStage[], r: RequestRun, body: Uint8Array, beside: boolean): Promise<StageRun[]> {
    const { settings } = this.deps;
    const { memory } = r;
    const ceiling = (acting: boolean) => (acting ? settings.GW_SKILL_CEILING_ACTING_MS : settings.GW_SKILL_CEILING_SHADOW_MS);
    const [lead, ...rest] = stages as [PlannedStage, ...PlannedStage[]];
    const acting = lead.arm === 'treatment';
    const followers = rest.map((f) => {
      const a = f.arm === 'treatment';
      return { stage: f.row.id, acting: a, ceilingMs: ceiling(a), started: memory.flag(f.slot) };
    });
    // followers read the task's context: it goes when any stage of the task asks for it
    const context = r.context(stages);
    return this.deps.pool.runWithFollowers({ stage: lead.row.id, surface: r.req.surface, acting, body, started: memory.flag(lead.slot), ...(context && { context }) }, ceiling(acting), followers, beside);
  }

  /**
   * The stage whose failure ended the task: this one, or, when its result was
   * lost with the task, the stage after it that missed its ceiling or lost its
   * thread. The stages between are reported too, so the headers name the cause.
   */
  private causeOf(task: readonly PlannedStage[], runs: readonly StageRun[], k: number, report: SkillReport, skills: SkillReport[]): SkillReport {
    let cause = report;
    for (let j = k; isLost(runs[j]!) && j + 1 < task.length; ) {
      j++;
      cause = this.report(task[j]!, runs[j]!, task[j]!.arm === 'treatment');
      skills.push(cause);
    }
    return cause;
  }

  // literals of one shape, not spreads of a shared base: a spread costs microseconds per report here (measured)
  private report(stage: PlannedStage, run: StageRun, acting: boolean): SkillReport {
    const { mode, arm } = stage;
    const skill = stage.row.id;
    const ms = round(run.ms);
    if (run.outcome !== 'done') return { skill, mode, arm, ms, outcome: run.outcome, detail: { reason: run.detail } };
    const { result, error } = run.reply;
    if (result === undefined) return { skill, mode, arm, ms, outcome: 'error', detail: { reason: error ?? 'the stage returned nothing' } };
    if (acting) return result.detail ? { skill, mode, arm, ms, outcome: result.outcome, detail: result.detail } : { skill, mode, arm, ms, outcome: result.outcome };
    // a shadow decision is recorded, never acted on
    return { skill, mode, arm, ms, outcome: 'shadow', detail: { decision: result.outcome, ...result.detail } };
  }
}

const isLost = (run: StageRun) => run.outcome !== 'done' && run.lost === true;
const reasonOf = (r: SkillReport) => (typeof r.detail?.['reason'] === 'string' ? ` (${r.detail['reason']})` : '');

/** `x-gw-skill-<id with _ as ->: <outcome>` for every stage that ran or was drawn into control. */
export const skillHeaders = (reports: readonly SkillReport[]): Array<[string, string]> =>
  reports.map((r) => [`x-gw-skill-${r.skill.replaceAll('_', '-')}`, r.outcome]);
