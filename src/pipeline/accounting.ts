import { costUsd, pricedModel } from '../providers/catalog.js';
import type { ProviderId } from '../providers/types.js';
import { countedUsage } from '../providers/usage/streamed-text.js';
import type { Caller } from '../tenancy/types.js';
import type { RowSink, SkillRecord } from './types.js';
import type { RelayOutcome } from './relay.js';

export interface CallRecord {
  requestId: string;
  endpoint: string;
  provider: ProviderId;
  model: string | undefined;
  caller: Caller;
  outcome: RelayOutcome;
  latencyMs: number;
  /** the body sent upstream: a stream that reports no usage has its prompt counted from it */
  requestBody: Buffer;
  /** what each skill stage did (none: no skill ran) */
  skills?: readonly SkillRecord[];
  /** why the call was relayed directly, if it was */
  errorDetail?: string;
}

/** The row's `skills`: each stage's arm and outcome, by skill. */
const skillColumns = (skills: readonly SkillRecord[]) => Object.fromEntries(skills.map((s) => [s.skill, { arm: s.arm, outcome: s.outcome }]));

/**
 * Turns a finished call into its inspector row. Returns the cost caps settle
 * on. A stream that ended without reporting usage is charged for the tokens
 * the gateway counted (its reply text, its request body) and its row says the
 * usage is estimated. Undefined when the vendor billed a call of which the
 * gateway saw nothing to count (a client gone before the reply): a cap then
 * keeps the call's whole reservation, never less than it may have cost.
 */
export function account(rows: RowSink, rec: CallRecord): number | undefined {
  const { outcome } = rec;
  // the tokenizer runs here only, once, for a stream that ended without usage
  const usage = outcome.usage ?? (outcome.streamedText && countedUsage(outcome.streamedText, rec.requestBody));
  const cost = costUsd(pricedModel(rec.model, usage), usage, rec.provider);
  rows.push({
    request_id: rec.requestId,
    ts: new Date().toISOString(),
    tenant_id: rec.caller.org.org_id,
    key_id: rec.caller.key.key_id,
    endpoint: rec.endpoint,
    provider: rec.provider,
    model: rec.model ?? null,
    routed_model: rec.model ?? null,
    route_reason: null,
    cache: 'off',
    tokens_in: usage?.input_tokens ?? 0,
    tokens_out: usage?.output_tokens ?? 0,
    tokens_saved: 0,
    cost_usd: cost,
    usage_estimated: outcome.usage === undefined && usage !== undefined,
    status: outcome.status,
    latency_ms: Math.round(rec.latencyMs * 100) / 100,
    prompt_preview: '',
    skills: skillColumns(rec.skills ?? []),
    error_detail: rec.errorDetail ?? null,
  });
  const { status } = outcome;
  const billedUnseen = outcome.dispatched && usage === undefined && ((status >= 200 && status < 300) || status === 499);
  return billedUnseen ? undefined : cost;
}
