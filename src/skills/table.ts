import type { SkillId, StoredMode } from '../tenancy/skills.js';

/**
 * THE skills table: one row per skill stage, in the order the stages run.
 * Adding a skill is one evaluator file plus one row here.
 *
 * - `per-key` rows take their mode from the key (and the request's override).
 * - `guardrail` rows are not per key: the deployment sets their mode
 *   (`modeSetting`), or they always act.
 */
export type SkillKind = 'per-key' | 'guardrail';

/** The deployment setting a guardrail row's mode follows; a row without one always acts. */
export type GuardrailModeSetting = 'GW_GUARDRAILS_MODEL_MODE';

interface RowBase {
  /** the evaluator: a module URL and the name of its exported `Evaluator` */
  evaluator: { module: string; export: string };
  /** in shadow it may run beside the upstream call (it reads the request and changes nothing) */
  shadowBesideDispatch: boolean;
  /** stages run in ascending order; acting stages each see the body the previous one produced */
  order: number;
  /** the stage reads the main thread's StageContext (allowed models, reachable providers, the key's skill params) */
  context?: true;
}

export interface PerKeyRow extends RowBase {
  id: SkillId;
  kind: 'per-key';
}

export interface GuardrailRow extends RowBase {
  id: string;
  kind: 'guardrail';
  modeSetting?: GuardrailModeSetting;
}

export type SkillRow = PerKeyRow | GuardrailRow;

/** An evaluator module next to this file: its URL works from src/ (tsx maps .js to .ts) and from dist/. */
const here = (path: string) => new URL(path, import.meta.url).href;

export const SKILLS: readonly SkillRow[] = [
  // the regex stage: always acts; a match refuses the request with guardrail_violation
  { id: 'guardrails', kind: 'guardrail', evaluator: { module: here('./guardrails/stage.js'), export: 'regexStage' }, shadowBesideDispatch: true, order: 10 },
  // the learned classifier (learned_injection): shadow, enforce or off by deployment
  {
    id: 'guardrails_model',
    kind: 'guardrail',
    modeSetting: 'GW_GUARDRAILS_MODEL_MODE',
    evaluator: { module: here('./guardrails/stage.js'), export: 'modelStage' },
    shadowBesideDispatch: true,
    order: 20,
  },
  // values (e-mail, phone, card, IBAN, SSN, IP, secrets) replaced by placeholders; the reply gets them back (./pii/tap.ts)
  { id: 'pii_redaction', kind: 'per-key', evaluator: { module: here('./pii/index.js'), export: 'evaluatePiiRedaction' }, shadowBesideDispatch: true, order: 30 },
  // lossless structural passes (whitespace, JSON minification, repeats, elided oversized tool output)
  { id: 'prompt_compaction', kind: 'per-key', evaluator: { module: here('./compaction/index.js'), export: 'evaluatePromptCompaction' }, shadowBesideDispatch: true, order: 40 },
  // older completed tool turns folded into one extractive summary turn, with a dollar ledger per fold
  {
    id: 'agent_trajectory_compaction',
    kind: 'per-key',
    evaluator: { module: here('./trajectory/index.js'), export: 'evaluateTrajectoryCompaction' },
    shadowBesideDispatch: true,
    order: 50,
    // the key's skill_params and the model the path names
    context: true,
  },
  // a model chosen for a request that names none, or a cheaper one of the same provider for a simple request; the call is planned again
  { id: 'model_routing', kind: 'per-key', evaluator: { module: here('./routing/index.js'), export: 'evaluateModelRouting' }, shadowBesideDispatch: true, order: 60, context: true },
  // last, on the body and model the call goes out with: exact, then near-duplicate match; a hit answers, a miss stores the reply (./cache/half.ts)
  { id: 'semantic_cache', kind: 'per-key', evaluator: { module: here('./cache/index.js'), export: 'evaluateSemanticCache' }, shadowBesideDispatch: true, order: 90 },
];

/** The rows in run order (a table built elsewhere, e.g. a test's, need not be sorted). */
export const inRunOrder = (rows: readonly SkillRow[]): SkillRow[] => [...rows].sort((a, b) => a.order - b.order);

/** A guardrail's deployment mode as a stored mode: `enforce` acts (prod), `shadow` records, `off` does not run. */
export const guardrailMode = (setting: 'shadow' | 'enforce' | 'off'): StoredMode => (setting === 'enforce' ? 'prod' : setting);

export interface LeverSettings {
  GW_GUARDRAILS_MODEL_MODE: 'shadow' | 'enforce' | 'off';
  GW_SKILL_CEILING_ACTING_MS: number;
  GW_SKILL_CEILING_SHADOW_MS: number;
}

/**
 * The deployment's skill levers for `/healthz`, derived from the table: every
 * stage with its kind and mode (`per_key` when the key decides), and the ceilings.
 */
export function skillLevers(settings: LeverSettings, rows: readonly SkillRow[] = SKILLS) {
  return {
    stages: inRunOrder(rows).map((r) => ({
      id: r.id,
      kind: r.kind,
      mode: r.kind === 'per-key' ? 'per_key' : r.modeSetting === undefined ? 'prod' : guardrailMode(settings[r.modeSetting]),
    })),
    ceilings_ms: { acting: settings.GW_SKILL_CEILING_ACTING_MS, shadow: settings.GW_SKILL_CEILING_SHADOW_MS },
  };
}
