import { GatewayError } from '../errors.js';
import type { SkillId, StoredMode } from '../tenancy/skills.js';
import { armFor, type Arm } from './arms.js';
import type { SkillPool, StageRun } from './pool.js';
import { FAIL_OPEN_OUTCOMES, type Outcome, type StageAnswer } from './stage.js';
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
    const flagBytes = stages * Int32Array.BYTES_PER_ELEMENT;
    const sab = new SharedArrayBuffer(flagBytes + body.byteLength);
    this.flags = new Int32Array(sab, 0, stages);
    this.body = new Uint8Array(sab, flagBytes, body.byteLength);
    this.body.set(body);
  }

  flag(slot: number): Int32Array {
    return this.flags.subarray(slot, slot + 1);
  }
}

const round = (ms: number) => Math.round(ms * 100) / 100;
const asBuffer = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
const NO_BESIDE: Promise<SkillReport[]> = Promise.resolve([]);

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
    if (plan.length === 0) return { verdict: { kind: 'continue' }, skills: [], beside: NO_BESIDE };
    const memory = new RequestMemory(req.body, plan.length);
    const skills: SkillReport[] = [];
    const later: PlannedStage[] = [];
    let body = memory.body;
    let changed = false;
    let model: string | undefined;

    for (const stage of plan) {
      if (stage.arm === 'control') {
        skills.push({ skill: stage.row.id, mode: stage.mode, arm: stage.arm, outcome: 'skipped', ms: 0 });
        continue;
      }
      // shadow work is shed before any request is: reported, never a bypass
      if (stage.arm === 'shadow' && this.deps.shedShadow?.()) {
        skills.push({ skill: stage.row.id, mode: stage.mode, arm: stage.arm, outcome: 'overloaded', ms: 0, detail: { reason: 'shadow work is shed while the replica is loaded' } });
        continue;
      }
      if (stage.arm === 'shadow' && stage.row.shadowBesideDispatch) {
        later.push(stage);
        continue;
      }
      const acting = stage.arm === 'treatment';
      const run = await this.runStage(stage, req, memory, body, acting);
      const report = this.report(stage, run, acting);
      skills.push(report);
      if (FAIL_OPEN_OUTCOMES.has(report.outcome)) {
        // a shadow stage may be abandoned alone while nothing has changed the request yet
        if (!acting && !changed) continue;
        return { verdict: { kind: 'bypass', reason: `${stage.row.id}: ${report.outcome}${reasonOf(report)}` }, skills, beside: NO_BESIDE };
      }
      const result = run.outcome === 'done' ? run.reply.result : undefined;
      if (!acting || result === undefined) continue;
      if (result.refuse) {
        const { type, message, fields } = result.refuse;
        return { verdict: { kind: 'refuse', error: new GatewayError(type, message, fields ? { fields } : {}) }, skills, beside: NO_BESIDE };
      }
      if (result.answer) return { verdict: { kind: 'answer', answer: result.answer }, skills, beside: NO_BESIDE };
      if (result.change?.body !== undefined) {
        body = result.change.body;
        changed = true;
      }
      if (result.change?.model !== undefined) {
        model = result.change.model;
        changed = true;
      }
    }

    const final = body;
    const beside = later.length === 0 ? NO_BESIDE : Promise.all(later.map(async (s) => this.report(s, await this.runStage(s, req, memory, final, false), false)));
    const verdict: SkillsVerdict = changed ? { kind: 'continue', ...(body !== memory.body && { body: asBuffer(body) }), ...(model !== undefined && { model }) } : { kind: 'continue' };
    return { verdict, skills, beside };
  }

  private runStage(stage: PlannedStage, req: SkillsRequest, memory: RequestMemory, body: Uint8Array, acting: boolean): Promise<StageRun> {
    const { settings } = this.deps;
    const ceiling = acting ? settings.GW_SKILL_CEILING_ACTING_MS : settings.GW_SKILL_CEILING_SHADOW_MS;
    return this.deps.pool.run({ stage: stage.row.id, surface: req.surface, acting, body, started: memory.flag(stage.slot) }, ceiling);
  }

  private report(stage: PlannedStage, run: StageRun, acting: boolean): SkillReport {
    const base = { skill: stage.row.id, mode: stage.mode, arm: stage.arm, ms: round(run.ms) };
    if (run.outcome !== 'done') return { ...base, outcome: run.outcome, detail: { reason: run.detail } };
    const { result, error } = run.reply;
    if (result === undefined) return { ...base, outcome: 'error', detail: { reason: error ?? 'the stage returned nothing' } };
    if (acting) return { ...base, outcome: result.outcome, ...(result.detail && { detail: result.detail }) };
    // a shadow decision is recorded, never acted on
    return { ...base, outcome: 'shadow', detail: { decision: result.outcome, ...result.detail } };
  }
}

const reasonOf = (r: SkillReport) => (typeof r.detail?.['reason'] === 'string' ? ` (${r.detail['reason']})` : '');

/** `x-gw-skill-<id with _ as ->: <outcome>` for every stage that ran or was drawn into control. */
export const skillHeaders = (reports: readonly SkillReport[]): Array<[string, string]> =>
  reports.map((r) => [`x-gw-skill-${r.skill.replaceAll('_', '-')}`, r.outcome]);
