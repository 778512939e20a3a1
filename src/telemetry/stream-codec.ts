import type { StageTiming } from '../http/stages.js';
import type { DecisionRecord, RequestRow, SkillOutcome } from './row.js';

/**
 * The columns of a row in the order its stream entry keeps them. A new
 * column goes at the end: an entry written before it existed reads it as null.
 */
const COLUMNS: ReadonlyArray<keyof RequestRow> = [
  'request_id',
  'ts',
  'tenant_id',
  'key_id',
  'session_id',
  'task_id',
  'team',
  'use_case',
  'desk',
  'pm',
  'strategy',
  'cost_centre',
  'project',
  'model',
  'provider',
  'surface',
  'channel',
  'tier',
  'relay_reason',
  'optimization_state',
  'status',
  'cache_tier',
  'destination_id',
  'model_serving_route',
  'egress_mode',
  'error_detail',
  'tokens_in',
  'tokens_out',
  'tokens_saved',
  'cost_usd',
  'latency_ms',
  'overhead_ms',
  'retry',
  'usage_estimated',
  'tool_fidelity',
  'skills',
  'error_type',
];
const ROW_FIELD = 'row';
const DECISION_FIELD = 'decision';

type PackedStage = [stage: string, ms: number] | [stage: string, ms: number, running: 1];
type PackedSkill = [skill: string, mode: string, arm: string, outcome: string, ms: number, detail: string | null, tokensSaved: number | null];
/**
 * The decision record as its entry keeps it: positional, without the field
 * names, which were more than half its bytes (and of what the append sends
 * and Redis keeps per row). A new part goes at the end.
 */
type PackedDecision = [
  served_by: DecisionRecord['served_by'],
  stages: PackedStage[],
  route: [provider: string, model: string | null, routed_model: string | null, reason: string | null],
  skills: PackedSkill[],
  cache: [result: DecisionRecord['cache']['result'], similarity: number | null],
  budget: [reserved_usd: number, settled_usd: number] | null,
  rate_limit: number | null,
  fail_open: string | null,
  refusal: [stage: string, type: string] | null,
  dispatch: DecisionRecord['dispatch'],
];

const packStage = (s: StageTiming): PackedStage => (s.running ? [s.stage, s.ms, 1] : [s.stage, s.ms]);
const packSkill = (s: SkillOutcome): PackedSkill => [s.skill, s.mode, s.arm, s.outcome, s.ms, s.detail ?? null, s.tokens_saved ?? null];

function packDecision(d: DecisionRecord): PackedDecision {
  const { route, cache, budget, refusal } = d;
  return [
    d.served_by,
    d.stages.map(packStage),
    [route.provider, route.model, route.routed_model, route.reason],
    d.skills.map(packSkill),
    [cache.result, cache.similarity ?? null],
    budget && [budget.reserved_usd, budget.settled_usd],
    d.rate_limit && d.rate_limit.remaining,
    d.fail_open && d.fail_open.reason,
    refusal && [refusal.stage, refusal.type],
    d.dispatch,
  ];
}

function unpackStage([stage, ms, running]: PackedStage): StageTiming {
  return running === 1 ? { stage, ms, running: true } : { stage, ms };
}

function unpackSkill([skill, mode, arm, outcome, ms, detail, tokensSaved]: PackedSkill): SkillOutcome {
  const out: SkillOutcome = { skill, mode, arm, outcome, ms };
  if (detail !== null) out.detail = detail;
  if (tokensSaved !== null) out.tokens_saved = tokensSaved;
  return out;
}

function unpackDecision(p: PackedDecision): DecisionRecord {
  const [served_by, stages, [provider, model, routed_model, reason], skills, [result, similarity], budget, remaining, failOpen, refusal, dispatch] = p;
  return {
    served_by,
    stages: stages.map(unpackStage),
    route: { provider, model, routed_model, reason },
    skills: skills.map(unpackSkill),
    cache: similarity === null ? { result } : { result, similarity },
    budget: budget && { reserved_usd: budget[0], settled_usd: budget[1] },
    rate_limit: remaining === null ? null : { remaining },
    fail_open: failOpen === null ? null : { reason: failOpen },
    refusal: refusal && { stage: refusal[0], type: refusal[1] },
    dispatch,
  };
}

/** A stored decision record: positional, or (written by an earlier build) the record's own JSON object. */
function decisionOf(json: string): DecisionRecord {
  const parsed = JSON.parse(json) as PackedDecision | DecisionRecord;
  return Array.isArray(parsed) ? unpackDecision(parsed) : parsed;
}

/**
 * The stream entry of a row: two fields, the row's values as one JSON array
 * in column order and the decision record packed, as JSON. Every entry has
 * the same two field names, which Redis stores once per node of the stream,
 * and the append sends two values per row, not one per column.
 */
export function encodeEntry(row: RequestRow, decision: DecisionRecord): [string, string, string, string] {
  const values: unknown[] = new Array(COLUMNS.length);
  for (let i = 0; i < COLUMNS.length; i++) values[i] = row[COLUMNS[i] as keyof RequestRow];
  return [ROW_FIELD, JSON.stringify(values), DECISION_FIELD, JSON.stringify(packDecision(decision))];
}

/**
 * A stream entry's row, and its decision record when asked; undefined for an
 * entry without a row field (one written by a build that kept a field per
 * column), which every read skips.
 */
export function decodeEntry(fields: readonly string[], withDecision: boolean): { row: RequestRow; decision: DecisionRecord | undefined } | undefined {
  let values: unknown[] | undefined;
  let decision: DecisionRecord | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === ROW_FIELD) values = JSON.parse(fields[i + 1] as string) as unknown[];
    else if (withDecision && fields[i] === DECISION_FIELD) decision = decisionOf(fields[i + 1] as string);
  }
  if (values === undefined) return undefined;
  const row: Record<string, unknown> = {};
  for (let i = 0; i < COLUMNS.length; i++) row[COLUMNS[i] as string] = values[i] ?? null;
  return { row: row as unknown as RequestRow, decision };
}
