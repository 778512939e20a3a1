import { costAtPrice, costUsd, pricedModel } from '../providers/catalog.js';
import type { Caller } from '../tenancy/types.js';
import type { RowSink, ServedBy } from './types.js';
import type { RelayOutcome } from './relay.js';

export interface CallRecord {
  requestId: string;
  endpoint: string;
  provider: string;
  model: string | undefined;
  caller: Caller;
  /** the self-hosted destination that served it, priced at its own rates */
  destination?: ServedBy | undefined;
  outcome: RelayOutcome;
  latencyMs: number;
}

/**
 * Turns a finished call into its inspector row. Returns the cost caps settle
 * on, or undefined when the vendor billed a call whose usage the gateway never
 * saw (a stream without a usage event, a client gone before the reply): a cap
 * then keeps the call's whole reservation, never less than it may have cost.
 */
export function account(rows: RowSink, rec: CallRecord): number | undefined {
  const cost = rec.destination ? costAtPrice(rec.destination.price, rec.outcome.usage) : costUsd(pricedModel(rec.model, rec.outcome.usage), rec.outcome.usage);
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
    tokens_in: rec.outcome.usage?.input_tokens ?? 0,
    tokens_out: rec.outcome.usage?.output_tokens ?? 0,
    tokens_saved: 0,
    cost_usd: cost,
    status: rec.outcome.status,
    latency_ms: Math.round(rec.latencyMs * 100) / 100,
    prompt_preview: '',
    destination_id: rec.destination?.destination_id ?? null,
    model_serving_route: rec.destination?.model_serving_route ?? null,
  });
  const { status, usage } = rec.outcome;
  const billedUnseen = rec.outcome.dispatched && usage === undefined && ((status >= 200 && status < 300) || status === 499);
  return billedUnseen ? undefined : cost;
}
