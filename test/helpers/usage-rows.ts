import type { DecisionRecord, RequestRow } from '../../src/telemetry/row.js';

/** The usage tests' rows: one tenant, values spread over a few models, teams, keys and other dimensions. */

const HOUR = 3_600_000;
export const TENANT = 'acme';
export const DECISION: DecisionRecord = { served_by: 'pipeline', stages: [], route: { provider: 'openai', model: 'gpt-4o', routed_model: 'gpt-4o', reason: null }, skills: [], cache: { result: 'off' }, budget: null, rate_limit: null, fail_open: null, refusal: null, dispatch: null };

/** row i of a spread over the last 50 hours, none within an hour of 24 hours ago (so a 24h window holds the same rows to either clock) */
export function usageRow(i: number, now: number, over: Partial<RequestRow> = {}): RequestRow {
  const ago = i % 2 === 0 ? 60_000 + ((i * 7_919_000) % (20 * HOUR)) : 27 * HOUR + ((i * 7_919_000) % (23 * HOUR));
  const pick = <T>(xs: readonly T[], salt: number): T => xs[(i * salt + (i >> 3)) % xs.length] as T;
  return {
    request_id: `req-${i}-${now}`,
    ts: new Date(now - ago).toISOString(),
    tenant_id: TENANT,
    key_id: pick(['key_a', 'key_b', 'key_c'], 5),
    session_id: null,
    task_id: null,
    team: pick(['quant', 'ops', null], 3),
    use_case: pick(['chat', 'extract', 'summarize', null], 7),
    desk: null,
    pm: null,
    strategy: null,
    cost_centre: pick(['cc-1', null, null], 11),
    project: pick(['p1', 'p2', null, null, null], 13),
    model: pick(['gpt-4o', 'claude-sonnet-4', 'gemini-2.5-pro'], 1),
    provider: pick(['openai', 'msgvendor', 'genvendor'], 1),
    surface: pick(['chat_completions', 'messages'], 17),
    channel: i % 3 === 0 ? 'stream' : 'json',
    tier: 'team',
    relay_reason: null,
    optimization_state: 'off',
    status: pick([200, 200, 200, 429, 502], 19),
    cache_tier: pick([null, null, null, 'exact'], 23),
    destination_id: null,
    model_serving_route: 'vendor',
    egress_mode: 'pass_through',
    error_detail: null,
    error_type: null,
    tokens_in: 100 + (i % 97),
    tokens_out: 10 + (i % 31),
    tokens_saved: 0,
    cost_usd: 0.0001 * (1 + (i % 13)),
    latency_ms: 100,
    overhead_ms: 0.1,
    retry: false,
    usage_estimated: false,
    tool_fidelity: null,
    skills: {},
    ...over,
  };
}
