import type { GatewayRequest, ResponseMeta } from '../http/types.js';
import { costAtPrice, costUsd, pricedModel } from '../providers/catalog.js';
import type { ProviderId } from '../providers/types.js';
import { countedUsage } from '../providers/usage/streamed-text.js';
import { toolCallFidelity } from '../lifecycle/tool-fidelity.js';
import { bodyDigest } from '../telemetry/retry.js';
import type { RowSink } from '../telemetry/row-sink.js';
import type { SkillOutcome } from '../telemetry/row.js';
import type { Caller } from '../tenancy/types.js';
import type { ServedBy, SkillRecord } from './types.js';
import type { RelayOutcome } from './relay.js';

export interface CallRecord {
  requestId: string;
  endpoint: string;
  provider: ProviderId;
  model: string | undefined;
  caller: Caller;
  /** the self-hosted destination that served it, priced at its own rates */
  destination?: ServedBy | undefined;
  outcome: RelayOutcome;
  latencyMs: number;
  /** the body sent upstream: a stream that reports no usage has its prompt counted from it */
  requestBody: Buffer;
  req: GatewayRequest;
  /** what the access line of the answer reads */
  answer: ResponseMeta;
  /** set when the call was relayed directly because the gateway's own machinery failed */
  failOpenReason: string | undefined;
  credentialSource: 'pass_through' | 'stored' | undefined;
  /** what each skill stage did (none: no skill ran) */
  skills?: readonly SkillRecord[];
}

/** The skill engine's reports as telemetry reads them: the arm named by the mode when there is none, the detail as text, the tokens a stage saved. */
const skillOutcomes = (skills: readonly SkillRecord[]): SkillOutcome[] =>
  skills.map((s) => {
    const saved = s.detail?.['tokens_saved'];
    return {
      skill: s.skill,
      mode: s.mode,
      arm: s.arm ?? s.mode,
      outcome: s.outcome,
      ms: s.ms,
      ...(s.detail !== undefined && { detail: JSON.stringify(s.detail) }),
      ...(typeof saved === 'number' && { tokens_saved: saved }),
    };
  });

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
    {
      requestId: rec.requestId,
      headers: rec.req.headers,
      bodyHash: bodyDigest(rec.req.body),
      tenantId: rec.caller.org.org_id,
      keyId: rec.caller.key.key_id,
      tier: rec.caller.org.plan,
      surface: rec.endpoint,
      provider: rec.provider,
      model: rec.model,
      status,
      usage,
      usageEstimated: outcome.usage === undefined && usage !== undefined,
      costUsd: cost,
      latencyMs: rec.latencyMs,
      overheadMs: outcome.overheadMs,
      ttfbMs: outcome.streamed && outcome.overheadMs !== undefined ? outcome.overheadMs + outcome.upstreamMs : undefined,
      streamed: outcome.streamed,
      servedBy: rec.failOpenReason === undefined ? 'pipeline' : 'direct_passthrough',
      failOpenReason: rec.failOpenReason,
      errorDetail: outcome.error?.message,
      stages: rec.req.stages.header(),
      credentialSource: rec.credentialSource,
      skills: skillOutcomes(rec.skills ?? []),
      budget: null,
      rateLimit: null,
      lines: rec.req.logLines,
      destination: rec.destination,
      toolFidelity: fidelityOf(rec),
    },
    rec.answer,
  );
  return billedUnseen ? undefined : cost;
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
