import type { StageTiming } from '../http/stages.js';
import type { Usage } from '../providers/types.js';
import { previewIn, withoutPreview } from '../skills/pii/index.js';
import { FAIL_OPEN_OUTCOMES } from '../skills/stage.js';
import { isoTime } from './iso-time.js';
import type { RequestLines } from './request-log.js';

/** One skill stage's report as accounting hands it over: the arm named (the mode's own name when not a canary), the detail as the engine gave it. */
export interface SkillReported {
  skill: string;
  mode: string;
  arm: string;
  outcome: string;
  ms: number;
  detail: Readonly<Record<string, unknown>> | undefined;
}

/** One skill stage's outcome on one request, as the decision record keeps it. */
export interface SkillOutcome {
  skill: string;
  mode: string;
  /** treatment or control for a canary; the mode's own name otherwise */
  arm: string;
  outcome: string;
  ms: number;
  detail?: string;
  /** input tokens the skill removed when it acted */
  tokens_saved?: number;
}

/**
 * What accounting knows about a finished request: the narrow input of the
 * telemetry pipeline. Bodies never enter it; `bodyHash` is the only trace of
 * the request body (retry detection).
 */
/** Usage dimensions the request body names (/v1/execute's `metadata`): each wins over its header. */
export type BodyDimensions = Readonly<Partial<Record<'session_id' | 'task_id' | 'team' | 'use_case', string>>>;

export interface FinishedRequest {
  requestId: string;
  /** the caller's request headers (the usage dimensions and retry count are read from them) */
  headers: Readonly<Record<string, string>>;
  /** the usage dimensions the body names, over the headers' */
  dimensions: BodyDimensions | undefined;
  /** a digest of the request body, compared with the same key's bodies of the last minute */
  bodyHash: string | undefined;
  tenantId: string;
  keyId: string;
  /** the org's plan */
  tier: string;
  surface: string;
  provider: string;
  model: string | undefined;
  status: number;
  usage: Usage | undefined;
  /** the vendor billed a call whose usage the gateway never saw: tokens are the gateway's own count */
  usageEstimated: boolean;
  costUsd: number;
  latencyMs: number;
  overheadMs: number | undefined;
  /** time from accept to the status line of a streamed reply */
  ttfbMs: number | undefined;
  streamed: boolean;
  servedBy: 'pipeline' | 'cache' | 'direct_passthrough';
  /** why the request was relayed directly (fail-open) */
  failOpenReason: string | undefined;
  /** the gateway's own error that ended the exchange */
  errorDetail: string | undefined;
  /** its type (docs/errors.md) */
  errorType: string | undefined;
  /** set when the gateway refused the request before any reply began: the stage that refused and why */
  refusal: { stage: string; type: string } | undefined;
  /** the stage timings (x-gw-stage-durations' values) */
  stages: StageTiming[];
  credentialSource: 'pass_through' | 'stored' | undefined;
  skills: readonly SkillReported[];
  budget: { reserved_usd: number; settled_usd: number } | null;
  rateLimit: { remaining: number } | null;
  /** the request's own log lines, kept with its ring entry */
  lines: RequestLines | undefined;
  /** the self-hosted destination that served the call (absent for a vendor) */
  destination?: { destination_id: string; model_serving_route: string } | undefined;
  /** a call with several destinations (an org's stored keys of the provider): what became of each, in order */
  dispatch?: readonly DispatchStepRecord[] | undefined;
  /** the reply's tool calls validate against the request's declared tools; null or absent when not measured */
  toolFidelity?: boolean | null;
}

/** One destination of a call with several: `served`, or why it was passed over or left. */
export interface DispatchStepRecord {
  destination: string;
  outcome: string;
}

/** The figures of a skill's report detail that the scorecard sums, kept in the durable row. */
export type SkillFigures = {
  tokens_saved?: number;
  usd_saved?: number;
  /** one fold's net dollars (agent_trajectory_compaction): trued up from the reply's cache usage when `ledger_trued_up`, else the estimate */
  ledger_usd?: number;
  /** the same fold's net dollars as estimated before the call */
  estimated_ledger_usd?: number;
  ledger_trued_up?: boolean;
  /** a shadow cache lookup's stored reply differed from the live one */
  false_hit?: boolean;
  /** a shadow stage's would-be outcome */
  decision?: string;
  /** redactions by kind */
  kinds?: Record<string, number>;
};

/** One skill's part in a request as its row keeps it. */
export interface SkillColumn {
  /** treatment, control or shadow */
  arm: string;
  /** the engine's outcome; `unreported` when only the key's stored mode gave the arm */
  outcome: string;
  detail?: SkillFigures;
}

/**
 * The arms a request is in by its key's stored skill modes, skill → arm (the
 * engine's own draw): a row has them even for skills the engine did not report.
 */
export type StoredArms = (keyId: string, sessionId: string | undefined, requestId: string) => ReadonlyArray<readonly [skill: string, arm: string]>;

/** The durable row: every column the durable list, the single read and usage answer from. */
export interface RequestRow {
  request_id: string;
  ts: string;
  tenant_id: string;
  key_id: string;
  session_id: string | null;
  task_id: string | null;
  team: string | null;
  use_case: string | null;
  desk: string | null;
  pm: string | null;
  strategy: string | null;
  cost_centre: string | null;
  project: string | null;
  model: string | null;
  provider: string;
  surface: string;
  channel: string;
  tier: string;
  relay_reason: string | null;
  optimization_state: string;
  status: number;
  cache_tier: string | null;
  destination_id: string | null;
  model_serving_route: string;
  egress_mode: string | null;
  error_detail: string | null;
  /** the type of the gateway's own error that ended the request (a refusal, a gateway timeout); null for a vendor's answer */
  error_type: string | null;
  tokens_in: number;
  tokens_out: number;
  tokens_saved: number;
  cost_usd: number;
  latency_ms: number;
  overhead_ms: number | null;
  retry: boolean;
  usage_estimated: boolean;
  /** the reply's tool calls validate against the request's declared tools; null when not measured */
  tool_fidelity: boolean | null;
  skills: Record<string, SkillColumn>;
}

export type { StageTiming };

/** What the gateway decided about a request, and why. */
export interface DecisionRecord {
  served_by: FinishedRequest['servedBy'];
  stages: StageTiming[];
  route: { provider: string; model: string | null; routed_model: string | null; reason: string | null };
  skills: SkillOutcome[];
  cache: { result: 'hit' | 'miss' | 'off' | 'bypass'; similarity?: number };
  budget: { reserved_usd: number; settled_usd: number } | null;
  rate_limit: { remaining: number } | null;
  fail_open: { reason: string } | null;
  /** the stage that refused the request, and the error it answered; null when the request was relayed or answered */
  refusal: { stage: string; type: string } | null;
  /** a call with several destinations: the one that served (null: none did) and what became of each; null for a call with one */
  dispatch: { served: string | null; steps: DispatchStepRecord[] } | null;
}

/** A row as the inspector feed shows it. */
export interface InspectorRow {
  request_id: string;
  ts: string;
  tenant_id: string;
  key_id: string;
  endpoint: string;
  provider: string;
  model: string | null;
  routed_model: string | null;
  route_reason: string | null;
  cache: DecisionRecord['cache']['result'];
  tokens_in: number;
  tokens_out: number;
  tokens_saved: number;
  cost_usd: number;
  status: number;
  latency_ms: number;
  prompt_preview: string;
}

/** The request headers of the usage dimensions, by row column. */
const DIMENSION_HEADERS = {
  session_id: 'x-gw-session',
  task_id: 'x-gw-task',
  team: 'x-gw-team',
  use_case: 'x-gw-use-case',
  desk: 'x-gw-desk',
  pm: 'x-gw-pm',
  strategy: 'x-gw-strategy',
  cost_centre: 'x-gw-cost-centre',
  project: 'x-gw-project',
} as const;

/** a caller's label is kept to this many characters */
const MAX_LABEL = 128;
const label = (v: string | undefined): string | null => (v === undefined || v === '' ? null : v.length > MAX_LABEL ? v.slice(0, MAX_LABEL) : v);
const round2 = (n: number): number => Math.round(n * 100) / 100;

const optimizationState = (skills: readonly SkillOutcome[]): string => {
  if (skills.some((s) => s.mode === 'prod' || s.arm === 'treatment')) return 'applied';
  return skills.length > 0 ? 'shadow' : 'off';
};

const FIGURE_NUMBERS = ['tokens_saved', 'usd_saved', 'ledger_usd', 'estimated_ledger_usd'] as const;

/** The prompt preview of the inspector feed: pii_redaction's, so only where it ran; '' otherwise. */
const previewOf = (f: FinishedRequest): string => previewIn(f.skills.find((s) => s.skill === 'pii_redaction')?.detail) ?? '';

/** A report as the decision record keeps it: the detail as text, and the input tokens the stage saved. */
function outcomeOf(s: SkillReported): SkillOutcome {
  // optional fields set on the literal, not spread into it (a spread took V8's slow path)
  const out: SkillOutcome = { skill: s.skill, mode: s.mode, arm: s.arm, outcome: s.outcome, ms: s.ms };
  if (s.detail === undefined) return out;
  // the record is durable: the prompt preview stays in the process
  out.detail = JSON.stringify(withoutPreview(s.detail));
  const saved = s.detail['tokens_saved'];
  if (typeof saved === 'number') out.tokens_saved = saved;
  return out;
}

/** a number the record keeps: JSON has no NaN or Infinity */
const isFigure = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** The summed figures of a skill's report (its detail, when an object, and its tokens_saved); undefined when none. */
function figuresOf(s: SkillOutcome, detail: SkillReported['detail']): SkillFigures | undefined {
  const out: SkillFigures = {};
  if (detail !== undefined) {
    for (const name of FIGURE_NUMBERS) if (isFigure(detail[name])) out[name] = detail[name];
    if (typeof detail['false_hit'] === 'boolean') out.false_hit = detail['false_hit'];
    if (typeof detail['ledger_trued_up'] === 'boolean') out.ledger_trued_up = detail['ledger_trued_up'];
    if (typeof detail['decision'] === 'string') out.decision = detail['decision'];
    const kinds = detail['kinds'];
    if (typeof kinds === 'object' && kinds !== null) out.kinds = Object.fromEntries(Object.entries(kinds).filter((e): e is [string, number] => isFigure(e[1])));
  }
  if (out.tokens_saved === undefined && s.tokens_saved !== undefined) out.tokens_saved = s.tokens_saved;
  return Object.keys(out).length === 0 ? undefined : out;
}

/** model_routing's choice when it acted: the model the request named (none: it left the choice to the router), the one the call went to, and why. */
function routeOf(f: FinishedRequest): DecisionRecord['route'] | undefined {
  const detail = f.skills.find((x) => x.skill === 'model_routing' && x.outcome === 'applied')?.detail;
  const route = detail?.['route'] as { model?: unknown; reason?: unknown } | undefined;
  if (typeof route?.model !== 'string') return undefined;
  return { provider: f.provider, model: typeof detail?.['from'] === 'string' ? detail['from'] : null, routed_model: route.model, reason: typeof route.reason === 'string' ? route.reason : null };
}

/** What the semantic cache did for the request, from its report: the decision record's `cache` and the row's `cache_tier` (the match of a hit). */
function cacheOf(f: FinishedRequest): { decision: DecisionRecord['cache']; tier: string | null } {
  const s = f.skills.find((x) => x.skill === 'semantic_cache');
  if (s === undefined) return { decision: { result: 'off' }, tier: null };
  const detail = s.detail ?? {};
  const similarity = isFigure(detail['similarity']) ? { similarity: detail['similarity'] } : {};
  if (s.outcome === 'hit') return { decision: { result: 'hit', ...similarity }, tier: f.servedBy === 'cache' && typeof detail['match'] === 'string' ? detail['match'] : null };
  if (s.outcome === 'miss') return { decision: { result: 'miss', ...similarity }, tier: null };
  if ((FAIL_OPEN_OUTCOMES as ReadonlySet<string>).has(s.outcome)) return { decision: { result: 'bypass' }, tier: null };
  // control, or shadow (its would-be decision is in its skills entry)
  return { decision: { result: 'off' }, tier: null };
}

/** The row's skills column: the key's stored-mode arms, overridden by what the engine reported. */
function skillColumns(f: FinishedRequest, outcomes: readonly SkillOutcome[], storedArms: StoredArms | undefined): Record<string, SkillColumn> {
  const skills: Record<string, SkillColumn> = {};
  // the session id as sent, as the engine draws with it
  if (storedArms) for (const [skill, arm] of storedArms(f.keyId, f.dimensions?.session_id ?? f.headers[DIMENSION_HEADERS.session_id], f.requestId)) skills[skill] = { arm, outcome: 'unreported' };
  for (const [i, s] of outcomes.entries()) {
    const detail = figuresOf(s, f.skills[i]?.detail);
    skills[s.skill] = detail === undefined ? { arm: s.arm, outcome: s.outcome } : { arm: s.arm, outcome: s.outcome, detail };
  }
  return skills;
}

/**
 * The row and decision record of a finished request, and the inspector's
 * prompt preview; `retry` is decided by the caller (it needs the key's recent
 * bodies). `storedArms` fills the arms of skills the engine did not report.
 */
export function buildRecord(f: FinishedRequest, retry: boolean, now: number, storedArms?: StoredArms): { row: RequestRow; decision: DecisionRecord; preview: string } {
  const h = f.headers;
  const outcomes = f.skills.map(outcomeOf);
  const skills = skillColumns(f, outcomes, storedArms);
  const cache = cacheOf(f);
  const route = routeOf(f);
  const tokensSaved = outcomes.reduce((n, s) => n + (s.tokens_saved ?? 0), 0);
  const routedModel = f.usage?.model ?? f.model ?? null;
  const row: RequestRow = {
    request_id: f.requestId,
    ts: isoTime(now),
    tenant_id: f.tenantId,
    key_id: f.keyId,
    session_id: label(f.dimensions?.session_id ?? h[DIMENSION_HEADERS.session_id]),
    task_id: label(f.dimensions?.task_id ?? h[DIMENSION_HEADERS.task_id]),
    team: label(f.dimensions?.team ?? h[DIMENSION_HEADERS.team]),
    use_case: label(f.dimensions?.use_case ?? h[DIMENSION_HEADERS.use_case]),
    desk: label(h[DIMENSION_HEADERS.desk]),
    pm: label(h[DIMENSION_HEADERS.pm]),
    strategy: label(h[DIMENSION_HEADERS.strategy]),
    cost_centre: label(h[DIMENSION_HEADERS.cost_centre]),
    project: label(h[DIMENSION_HEADERS.project]),
    model: f.model ?? null,
    provider: f.provider,
    surface: f.surface,
    channel: f.streamed ? 'stream' : 'json',
    tier: f.tier,
    relay_reason: f.servedBy === 'direct_passthrough' ? 'fail_open' : null,
    optimization_state: optimizationState(outcomes),
    status: f.status,
    cache_tier: cache.tier,
    destination_id: f.destination?.destination_id ?? servedBy(f.dispatch) ?? null,
    model_serving_route: f.destination?.model_serving_route ?? 'vendor',
    egress_mode: f.credentialSource ?? null,
    error_detail: f.failOpenReason ?? f.errorDetail ?? null,
    error_type: f.errorType ?? null,
    tokens_in: f.usage?.input_tokens ?? 0,
    tokens_out: f.usage?.output_tokens ?? 0,
    tokens_saved: tokensSaved,
    cost_usd: f.costUsd,
    latency_ms: round2(f.latencyMs),
    overhead_ms: f.overheadMs === undefined ? null : round2(f.overheadMs),
    retry,
    usage_estimated: f.usageEstimated,
    tool_fidelity: f.toolFidelity ?? null,
    skills,
  };
  const decision: DecisionRecord = {
    served_by: f.servedBy,
    stages: f.stages,
    route: route ?? { provider: f.provider, model: f.model ?? null, routed_model: routedModel, reason: routedModel === (f.model ?? null) ? null : 'vendor_reported_model' },
    skills: outcomes,
    cache: cache.decision,
    budget: f.budget,
    rate_limit: f.rateLimit,
    fail_open: f.failOpenReason === undefined ? null : { reason: f.failOpenReason },
    refusal: f.refusal ?? null,
    dispatch: f.dispatch ? { served: servedBy(f.dispatch) ?? null, steps: [...f.dispatch] } : null,
  };
  return { row, decision, preview: previewOf(f) };
}

const servedBy = (steps: readonly DispatchStepRecord[] | undefined): string | undefined => steps?.find((s) => s.outcome === 'served')?.destination;

/**
 * The inspector's view of a row. Bodies never enter telemetry: the prompt
 * preview is the one pii_redaction made from the text it redacted, empty
 * where that skill did not run.
 */
export function inspectorRow(row: RequestRow, decision: DecisionRecord, preview: string): InspectorRow {
  return {
    request_id: row.request_id,
    ts: row.ts,
    tenant_id: row.tenant_id,
    key_id: row.key_id,
    endpoint: row.surface,
    provider: row.provider,
    model: row.model,
    routed_model: decision.route.routed_model,
    route_reason: decision.route.reason,
    cache: decision.cache.result,
    tokens_in: row.tokens_in,
    tokens_out: row.tokens_out,
    tokens_saved: row.tokens_saved,
    cost_usd: row.cost_usd,
    status: row.status,
    latency_ms: row.latency_ms,
    prompt_preview: preview,
  };
}
