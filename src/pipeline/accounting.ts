import type { GatewayError } from '../errors.js';
import type { GatewayRequest, ResponseMeta } from '../http/types.js';
import { costAtPrice, costUsd, pricedModel } from '../providers/catalog.js';
import type { ProviderId } from '../providers/types.js';
import { countedUsage } from '../providers/usage/streamed-text.js';
import { toolCallFidelity } from '../lifecycle/tool-fidelity.js';
import { trueUpFolds } from '../skills/trajectory/true-up.js';
import { bodyDigest } from '../telemetry/retry.js';
import type { RowSink } from '../telemetry/row-sink.js';
import type { BodyDimensions, FinishedRequest, SkillReported } from '../telemetry/row.js';
import type { Caller } from '../tenancy/types.js';
import type { DispatchStep, ServedBy, SkillRecord, StageName } from './types.js';
import type { RelayOutcome } from './relay.js';

/** What every row of a request reads of it, whether it was relayed or refused. */
interface RequestRecord {
  requestId: string;
  endpoint: string;
  model: string | undefined;
  caller: Caller;
  latencyMs: number;
  req: GatewayRequest;
  /** the usage dimensions the body names (the route's reading), over the headers' */
  dimensions?: BodyDimensions | undefined;
  /** what the access line of the answer reads */
  answer: ResponseMeta;
  /** set when the call was relayed directly because the gateway's own machinery failed */
  failOpenReason: string | undefined;
  /** answered from the semantic cache: nothing went upstream */
  fromCache?: boolean;
  credentialSource: 'pass_through' | 'stored' | undefined;
  /** what each skill stage did (none: no skill ran) */
  skills?: readonly SkillRecord[];
  /** the spend-cap reservation of the call (USD), unsettled; undefined: none was made (no cap) */
  reservedUsd?: number | undefined;
  /** the rate limit's remaining requests once it admitted the request; undefined: not judged */
  rateLimitRemaining?: number | undefined;
  /** a call with several destinations: what became of each */
  dispatch?: DispatchStep[] | undefined;
}

export interface CallRecord extends RequestRecord {
  provider: ProviderId;
  /** the self-hosted destination that served it, priced at its own rates */
  destination?: ServedBy | undefined;
  outcome: RelayOutcome;
  /** the body sent upstream: a stream that reports no usage has its prompt counted from it */
  requestBody: Buffer;
}

/** A request the gateway answered with its own error before a reply began (a policy, a guardrail, validation). */
export interface RefusalRecord extends RequestRecord {
  /** undefined when the refusal came before the route had planned a call */
  provider: ProviderId | undefined;
  error: GatewayError;
  /** the stage that refused */
  stage: StageName;
}

/** The skill engine's reports as telemetry takes them: the arm named by the mode when there is none. */
const skillsReported = (skills: readonly SkillRecord[]): SkillReported[] => skills.map((s) => ({ skill: s.skill, mode: s.mode, arm: s.arm ?? s.mode, outcome: s.outcome, ms: s.ms, detail: s.detail }));

/**
 * The skill reports as the row keeps them: a fold's ledger trued up from the
 * vendor's usage when the call went upstream as the skills left it (not
 * answered from the cache, not relayed directly).
 */
function settledSkills(rec: CallRecord): CallRecord['skills'] {
  const { skills, outcome } = rec;
  if (skills === undefined || rec.fromCache || rec.failOpenReason !== undefined) return skills;
  return trueUpFolds(skills, { usage: outcome.usage, model: rec.model, provider: rec.provider });
}

/**
 * Hands a finished call to telemetry as its row. Returns the cost caps settle
 * on. A stream that ended without reporting usage is charged for the tokens
 * the gateway counted (its reply text, its request body) and its row says the
 * usage is estimated. Undefined when the vendor billed a call of which the
 * gateway saw nothing to count (a client gone before the reply): a cap then
 * keeps the call's whole reservation, never less than it may have cost.
 */
export function account(rows: RowSink, rec: CallRecord): number | undefined {
  const { outcome } = rec;
  const { status } = outcome;
  // the tokenizer runs here only, once, for a stream that ended without usage
  const usage = outcome.usage ?? (outcome.streamedText && countedUsage(outcome.streamedText, rec.requestBody));
  const cost = rec.destination ? costAtPrice(rec.destination.price, usage) : costUsd(pricedModel(rec.model, usage), usage, rec.provider);
  const billedUnseen = outcome.dispatched && usage === undefined && ((status >= 200 && status < 300) || status === 499);
  rows.finished(
    finishedRequest(rec, settledSkills(rec), {
      provider: rec.provider,
      status,
      usage,
      usageEstimated: outcome.usage === undefined && usage !== undefined,
      costUsd: cost,
      overheadMs: outcome.overheadMs,
      ttfbMs: outcome.streamed && outcome.overheadMs !== undefined ? outcome.overheadMs + outcome.upstreamMs : undefined,
      streamed: outcome.streamed,
      errorDetail: outcome.error?.message,
      errorType: outcome.error?.type,
      refusal: undefined,
      // a cap keeps the whole reservation of a call billed unseen, else settles to its cost
      budget: budgetOf(rec.reservedUsd, billedUnseen ? rec.reservedUsd : cost),
      rateLimit: rateLimitOf(rec.rateLimitRemaining),
      destination: rec.destination,
      dispatch: rec.dispatch,
      toolFidelity: fidelityOf(rec),
    }),
    rec.answer,
  );
  return billedUnseen ? undefined : cost;
}

/**
 * Hands a refused request to telemetry as its row: the refusal's status and
 * error type, nothing spent. Its reservation, if it made one, is released
 * (settled at 0); a spend-cap refusal reserved nothing of an org that has a
 * cap, and a rate-limit refusal left the org nothing.
 */
export function accountRefusal(rows: RowSink, rec: RefusalRecord): void {
  const { error } = rec;
  const reserved = rec.reservedUsd ?? (error.type === 'budget_exhausted' ? 0 : undefined);
  rows.finished(
    finishedRequest(rec, rec.skills, {
      provider: rec.provider ?? 'none',
      status: error.status,
      usage: undefined,
      usageEstimated: false,
      costUsd: 0,
      overheadMs: undefined,
      ttfbMs: undefined,
      streamed: false,
      errorDetail: error.message,
      errorType: error.type,
      refusal: { stage: rec.stage, type: error.type },
      budget: budgetOf(reserved, 0),
      rateLimit: rec.rateLimitRemaining === undefined && error.type === 'rate_limited' ? { remaining: 0 } : rateLimitOf(rec.rateLimitRemaining),
      dispatch: rec.dispatch,
    }),
    rec.answer,
  );
}

/** USD to the nano-dollar, as the spend cap keeps it */
const nano = (usd: number): number => Math.round(usd * 1e9) / 1e9;

/** the decision record's budget: null when no reservation was made (the org has no cap, or metering did not run) */
const budgetOf = (reserved: number | undefined, settled: number | undefined): FinishedRequest['budget'] =>
  reserved === undefined ? null : { reserved_usd: nano(reserved), settled_usd: nano(settled ?? reserved) };

const rateLimitOf = (remaining: number | undefined): FinishedRequest['rateLimit'] => (remaining === undefined ? null : { remaining });

/** What became of the request: the row's columns accounting adds to those of the request itself. */
type OutcomeColumns = Omit<FinishedRequest, 'requestId' | 'headers' | 'dimensions' | 'bodyHash' | 'tenantId' | 'keyId' | 'tier' | 'surface' | 'model' | 'latencyMs' | 'servedBy' | 'failOpenReason' | 'stages' | 'credentialSource' | 'skills' | 'lines'>;

/**
 * The finished request as one object literal of a fixed shape: a spread of
 * the request's columns into the outcome's made V8 add each property on a
 * slow path, about 15 µs of CPU per request.
 */
function finishedRequest(rec: RequestRecord, skills: RequestRecord['skills'], o: OutcomeColumns): FinishedRequest {
  return {
    requestId: rec.requestId,
    headers: rec.req.headers,
    dimensions: rec.dimensions,
    bodyHash: bodyDigest(rec.req.body),
    tenantId: rec.caller.org.org_id,
    keyId: rec.caller.key.key_id,
    tier: rec.caller.org.plan,
    surface: rec.endpoint,
    model: rec.model,
    latencyMs: rec.latencyMs,
    servedBy: rec.failOpenReason !== undefined ? 'direct_passthrough' : rec.fromCache ? 'cache' : 'pipeline',
    failOpenReason: rec.failOpenReason,
    stages: rec.req.stages.timings(),
    credentialSource: rec.credentialSource,
    skills: skillsReported(skills ?? []),
    lines: rec.req.logLines,
    provider: o.provider,
    status: o.status,
    usage: o.usage,
    usageEstimated: o.usageEstimated,
    costUsd: o.costUsd,
    overheadMs: o.overheadMs,
    ttfbMs: o.ttfbMs,
    streamed: o.streamed,
    errorDetail: o.errorDetail,
    errorType: o.errorType,
    refusal: o.refusal,
    budget: o.budget,
    rateLimit: o.rateLimit,
    destination: o.destination,
    dispatch: o.dispatch,
    toolFidelity: o.toolFidelity,
  };
}

/** the surfaces whose upstream call is chat-completions with declarable tools (/v1/execute relays chat-completions) */
const TOOL_SURFACES: ReadonlySet<string> = new Set(['chat_completions', 'execute']);
const TOOLS_FIELD = Buffer.from('"tools"');

/**
 * Tool-call fidelity of a whole JSON reply to a call that declared tools;
 * undefined otherwise (streams, oversized replies, other surfaces). A
 * translated call's body and reply are in another vendor's format, which
 * declares no chat-completions tools, so it is not measured.
 */
function fidelityOf(rec: CallRecord): boolean | null | undefined {
  const { replyJson } = rec.outcome;
  if (replyJson === undefined || !TOOL_SURFACES.has(rec.endpoint) || !rec.requestBody.includes(TOOLS_FIELD)) return undefined;
  let request: unknown;
  try {
    request = JSON.parse(rec.requestBody.toString('utf8'));
  } catch {
    return undefined;
  }
  return toolCallFidelity(request, replyJson);
}
