import type { GatewayRequest, ResponseMeta } from '../http/types.js';
import { costUsd, pricedModel } from '../providers/catalog.js';
import { bodyDigest } from '../telemetry/retry.js';
import type { RowSink } from '../telemetry/row-sink.js';
import type { Caller } from './auth.js';
import type { RelayOutcome } from './relay.js';

export interface CallRecord {
  requestId: string;
  endpoint: string;
  provider: string;
  model: string | undefined;
  caller: Caller;
  outcome: RelayOutcome;
  latencyMs: number;
  req: GatewayRequest;
  /** what the access line of the answer reads */
  answer: ResponseMeta;
  /** set when the call was relayed directly because the gateway's own machinery failed */
  failOpenReason: string | undefined;
  credentialSource: 'pass_through' | 'stored' | undefined;
}

/**
 * Hands a finished call to telemetry as its row. Returns the cost caps settle
 * on, or undefined when the vendor billed a call whose usage the gateway never
 * saw (a stream without a usage event, a client gone before the reply): a cap
 * then keeps the call's whole reservation, never less than it may have cost.
 */
export function account(rows: RowSink, rec: CallRecord): number | undefined {
  const cost = costUsd(pricedModel(rec.model, rec.outcome.usage), rec.outcome.usage);
  const { status, usage } = rec.outcome;
  const billedUnseen = rec.outcome.dispatched && usage === undefined && ((status >= 200 && status < 300) || status === 499);
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
      usageEstimated: billedUnseen,
      costUsd: cost,
      latencyMs: rec.latencyMs,
      overheadMs: rec.outcome.overheadMs,
      ttfbMs: rec.outcome.streamed && rec.outcome.overheadMs !== undefined ? rec.outcome.overheadMs + rec.outcome.upstreamMs : undefined,
      streamed: rec.outcome.streamed,
      servedBy: rec.failOpenReason === undefined ? 'pipeline' : 'direct_passthrough',
      failOpenReason: rec.failOpenReason,
      errorDetail: rec.outcome.error?.message,
      stages: rec.req.stages.header(),
      credentialSource: rec.credentialSource,
      skills: [],
      budget: null,
      rateLimit: null,
      lines: rec.req.logLines,
    },
    rec.answer,
  );
  return billedUnseen ? undefined : cost;
}
