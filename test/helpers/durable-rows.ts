import { Redis } from 'ioredis';
import type { ScorecardRow } from '../../src/lifecycle/rows.js';
import { telemetryKeys } from '../../src/telemetry/keys.js';
import type { DecisionRecord, RequestRow } from '../../src/telemetry/row.js';
import { encodeEntry } from '../../src/telemetry/stream-codec.js';
import { REDIS_URL, type TestGateway } from './gateway.js';

/** A durable request row carrying a scorecard row's columns; the rest are a plain vendor call's. */
function requestRow(r: ScorecardRow): RequestRow {
  return {
    ...r,
    team: null,
    use_case: null,
    desk: null,
    pm: null,
    strategy: null,
    cost_centre: null,
    project: null,
    model: 'gpt-4o',
    provider: 'openai',
    surface: 'chat_completions',
    channel: 'json',
    tier: 'free',
    optimization_state: 'applied',
    cache_tier: null,
    destination_id: null,
    model_serving_route: 'vendor',
    egress_mode: 'pass_through',
    usage_estimated: false,
    skills: { ...r.skills },
  };
}

const DECISION: DecisionRecord = {
  served_by: 'pipeline',
  stages: [],
  route: { provider: 'openai', model: 'gpt-4o', routed_model: 'gpt-4o', reason: null },
  skills: [],
  cache: { result: 'off' },
  budget: null,
  rate_limit: null,
  fail_open: null,
};

/**
 * Feeds scorecard rows where a gateway's scorecards read them: its process
 * window without Redis; with Redis, the tenant's durable row stream, in the
 * entry format the telemetry writer appends (so every replica reads them).
 */
export async function feedRows(gw: TestGateway, rows: readonly ScorecardRow[]): Promise<void> {
  if (gw.redisPrefix === undefined) {
    for (const r of rows) gw.gateway.scorecardRows.record(r);
    return;
  }
  const redis = new Redis(REDIS_URL);
  try {
    const pipeline = redis.pipeline();
    for (const r of rows) pipeline.xadd(telemetryKeys(gw.redisPrefix, r.tenant_id).rows, '*', ...encodeEntry(requestRow(r), DECISION));
    await pipeline.exec();
  } finally {
    redis.disconnect();
  }
}
