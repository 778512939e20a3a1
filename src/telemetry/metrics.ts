import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { HotCounter, HotHistogram } from './hot-metrics.js';
import type { Usage } from '../providers/types.js';
import type { RequestRow, SkillOutcome } from './row.js';

const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** beyond a minute, request durations run up to the stream deadline */
const LONG_BUCKETS = [120, 300, 600, 1800, 3600, 7200, 14400];
const durationBuckets = (streamDeadlineS: number): number[] => [...LATENCY_BUCKETS, ...LONG_BUCKETS.filter((b) => b < streamDeadlineS), streamDeadlineS];

/**
 * Distinct values a caller-driven label (model, tenant) may take per process;
 * later values are counted under `other`, so a series count stays bounded.
 */
export const LABEL_VALUE_CAP = 100;

/** Keeps the first LABEL_VALUE_CAP values of a label; the rest read `other`. */
class LabelCap {
  private readonly kept = new Set<string>();

  value(v: string): string {
    if (this.kept.has(v)) return v;
    if (this.kept.size >= LABEL_VALUE_CAP) return 'other';
    this.kept.add(v);
    return v;
  }
}

export interface MetricsOptions {
  /** GW_STREAM_DEADLINE_S: the last request-duration bucket */
  streamDeadlineS: number;
}

export interface PoolStats {
  origin: string;
  connected: number;
  free: number;
  pending: number;
  running: number;
}

/** Every metric the gateway exports, created once per process. */
export function createMetrics(opts: MetricsOptions = { streamDeadlineS: 3600 }) {
  const registry = new Registry();
  const models = new LabelCap();
  const tenants = new LabelCap();
  let rowsBuffered: () => number = () => 0;
  let sumsPending: () => number = () => 0;
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 });
  let poolStats: () => PoolStats[] = () => [];
  let inFlight: () => number = () => 0;
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();

  const m = {
    registry,
    requests: new HotCounter('gw_requests_total', 'Requests answered, by surface, status and provider', ['surface', 'status', 'provider'], registry),
    duration: new HotHistogram('gw_request_duration_seconds', 'Time from accept to the last byte, by surface', ['surface'], durationBuckets(opts.streamDeadlineS), registry),
    streamTtfb: new HotHistogram('gw_stream_time_to_first_byte_seconds', 'Time from accept to the status line of a streamed reply, by surface', ['surface'], LATENCY_BUCKETS, registry),
    modelTokens: new HotCounter('gw_model_tokens_total', `Tokens of relayed calls by model (at most ${LABEL_VALUE_CAP} models per process, the rest as other) and kind (input, output)`, ['model', 'kind'], registry),
    modelCostUsd: new HotCounter('gw_model_cost_usd_total', `Cost of relayed calls at catalog prices, by model (capped like gw_model_tokens_total)`, ['model'], registry),
    tenantTokens: new HotCounter('gw_tenant_tokens_total', `Tokens of relayed calls by tenant (at most ${LABEL_VALUE_CAP} tenants per process, the rest as other) and kind`, ['tenant', 'kind'], registry),
    tenantCostUsd: new HotCounter('gw_tenant_cost_usd_total', 'Cost of relayed calls at catalog prices, by tenant (capped like gw_tenant_tokens_total)', ['tenant'], registry),
    skillOutcomes: new HotCounter('gw_skill_outcomes_total', 'Skill stages run on requests, by skill and outcome', ['skill', 'outcome'], registry),
    skillTokensSaved: new HotCounter('gw_skill_tokens_saved_total', 'Tokens not spent thanks to skills that acted (input removed; for a cache hit, the stored call\'s input and output), by skill', ['skill'], registry),
    skillRedactions: new HotCounter('gw_skill_redactions_total', 'Values pii_redaction replaced with placeholders (acting), by kind', ['kind'], registry),
    skillRouted: new HotCounter('gw_skill_routed_total', 'Calls model_routing sent to a model other than the one named (or chose one for), by routed model', ['model'], registry),
    foldLedgerUsd: new HotCounter(
      'gw_skill_fold_ledger_usd_total',
      "Net dollars of agent_trajectory_compaction's folds (acting and shadow), by sign (saved: net ≥ 0, lost: net < 0) and basis (trued_up from the reply's cache usage, or estimate)",
      ['sign', 'basis'],
      registry,
    ),
    telemetryRowsAppended: new Counter({ name: 'gw_telemetry_rows_appended_total', help: 'Request rows appended to the Redis telemetry streams', registers: [registry] }),
    telemetryRowsDropped: new Counter({
      name: 'gw_telemetry_rows_dropped_total',
      help: 'Request rows never appended to the Redis telemetry streams: the buffer was full while Redis was slow or away, or the replica stopped first',
      registers: [registry],
    }),
    telemetryAppendFailures: new Counter({ name: 'gw_telemetry_append_failures_total', help: 'Telemetry batches Redis did not take (each is sent again)', registers: [registry] }),
    usageSums: new Counter({
      name: 'gw_telemetry_usage_sums_total',
      help: 'Finished hours and days of usage handed to summing into projections, by outcome: summed (stored by this process), failed (Redis away or slow; tried again, three times in all), overflow (not queued: the queue was full; left to the first read)',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    overhead: new HotHistogram(
      'gw_gateway_overhead_seconds',
      'The gateway\'s own time in a relayed call: before dispatch, and for a whole reply from its last byte to the answer',
      ['surface'],
      LATENCY_BUCKETS,
      registry,
    ),
    upstreamLatency: new HotHistogram('gw_upstream_latency_seconds', 'Time from dispatch to the upstream response start, by provider', ['provider'], LATENCY_BUCKETS, registry),
    upstreamErrors: new Counter({
      name: 'gw_upstream_errors_total',
      help: 'Upstream calls that failed before or during the response, by provider and kind',
      labelNames: ['provider', 'kind'] as const,
      registers: [registry],
    }),
    tokens: new HotCounter('gw_tokens_total', 'Tokens read from relayed replies, by provider and kind (input, output, cached)', ['provider', 'kind'], registry),
    costUsd: new HotCounter('gw_cost_usd_total', 'Cost of relayed calls at catalog prices, by provider', ['provider'], registry),
    dispatchDestinations: new Counter({
      name: 'gw_dispatch_destinations_total',
      help: 'Destinations of calls with several (an org\'s stored keys of a provider), by provider and what became of each: served, at_limit, cooling, region_excluded, connect_failed, rate_limited, server_error',
      labelNames: ['provider', 'outcome'] as const,
      registers: [registry],
    }),
    passthrough: new Counter({
      name: 'gw_passthrough_total',
      help: 'Calls relayed directly to the provider because a stage of the gateway itself failed (fail-open), by stage',
      labelNames: ['stage'] as const,
      registers: [registry],
    }),
    inFlight: new Gauge({
      name: 'gw_in_flight_requests',
      help: 'Requests accepted and not yet answered',
      registers: [registry],
      // read from the front's own count at scrape time, not kept twice per request
      collect() {
        this.set(inFlight());
      },
    }),
    streamTimeouts: new Counter({
      name: 'gw_stream_timeouts_total',
      help: 'Streams closed by the gateway for idleness or the stream deadline',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    shed: new Counter({
      name: 'gw_shed_total',
      help: 'Requests answered 503 overloaded on the replica\'s own capacity, by where they were shed (ingress_budget, loop_stall, queue_wait, upstream_inflight)',
      labelNames: ['where'] as const,
      registers: [registry],
    }),
    refusedFraming: new Counter({
      name: 'gw_refused_framing_total',
      help: 'Requests refused at the front for ambiguous framing or bad header bytes',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    spendCapStoreFailures: new Counter({
      name: 'gw_spend_cap_store_failures_total',
      help: 'Metering store calls that failed, by op; a failed reserve relays the call unmetered (fail-open)',
      labelNames: ['op'] as const,
      registers: [registry],
    }),
    storeDataLoss: new Counter({
      name: 'gw_store_data_loss_total',
      help: 'Times this replica found that Redis had lost the configuration documents (restarted empty, flushed) and kept serving from its mirror while restoring them',
      registers: [registry],
    }),
    rateLimitLeases: new Counter({
      name: 'gw_rate_limit_lease_calls_total',
      help: 'Token leases a replica asked of the shared rate-limit bucket, by result (ok, error; slow: a request stopped waiting for it and limited locally)',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    rateLimitWaits: new Counter({
      name: 'gw_rate_limit_waits_total',
      help: 'Requests that waited for a token lease: the replica held no tokens and did not know the shared bucket was dry',
      registers: [registry],
    }),
    skillRespawns: new Counter({
      name: 'gw_skill_thread_respawns_total',
      help: 'Skill pool threads that ended mid-stage and were replaced: killed after a stage ignored its ceiling (backstop) or died (exit)',
      labelNames: ['cause'] as const,
      registers: [registry],
    }),
    skillQueueWait: new HotHistogram('gw_skill_queue_wait_seconds', 'Time a skill stage waited for a pool thread (message hops included), by stage', ['stage'], LATENCY_BUCKETS, registry),
    skillRunTime: new HotHistogram('gw_skill_run_seconds', 'Time a skill stage ran in its pool thread, by stage', ['stage'], LATENCY_BUCKETS, registry),
    skillTasks: new Counter({
      name: 'gw_skill_pool_tasks_total',
      help: 'Tasks handed to skill pool threads: one stage (with the stages that follow it), or the stages handed over in one event-loop turn while every thread was busy',
      registers: [registry],
    }),
    breakerSweeps: new Counter({
      name: 'gw_breaker_sweep_runs_total',
      help: 'Breaker sweep periods, by result: swept (this replica held the lease), standby (another did), failed',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    scorecardSamplesDropped: new Counter({
      name: 'gw_scorecard_samples_dropped_total',
      help: 'Requests whose scorecard samples never reached Redis: the buffer was full while Redis was slow or away, or the replica stopped first',
      registers: [registry],
    }),
    scorecardSamplesFailures: new Counter({ name: 'gw_scorecard_samples_failures_total', help: 'Batches of scorecard samples Redis did not take (each is sent again)', registers: [registry] }),
    breakerRollbacks: new Counter({ name: 'gw_breaker_rollbacks_total', help: 'Keys rolled back by the breaker sweep, by skill', labelNames: ['skill'] as const, registers: [registry] }),
    breakerFailures: new Counter({
      name: 'gw_breaker_sweep_failures_total',
      help: 'Scorecard reads or rollback writes of the breaker sweep that failed, by skill',
      labelNames: ['skill'] as const,
      registers: [registry],
    }),
    /** the breaker sweep's observer (lifecycle/sweep.ts SweepObserver) */
    breakerSweep: {
      run(result: 'swept' | 'standby' | 'failed') {
        m.breakerSweeps.inc({ result });
      },
      rolledBack(skill: string) {
        m.breakerRollbacks.inc({ skill });
      },
      failed(skill: string) {
        m.breakerFailures.inc({ skill });
      },
    },
    /** the skill pool's observer (skills/pool.ts PoolObserver) */
    skillPool: {
      threadRespawned(cause: 'backstop' | 'exit') {
        m.skillRespawns.inc({ cause });
      },
      stageTimed(stage: string, queueWaitMs: number, runMs: number) {
        m.skillQueueWait.observe([stage], queueWaitMs / 1000);
        m.skillRunTime.observe([stage], runMs / 1000);
      },
      taskSent() {
        m.skillTasks.inc();
      },
    },
    cacheLookups: new Counter({
      name: 'gw_cache_lookups_total',
      help: 'semantic_cache store lookups, by result (hit, miss, error: the store failed or was slow and the call was relayed)',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    cacheShadowCompared: new Counter({
      name: 'gw_cache_shadow_compared_total',
      help: 'semantic_cache in shadow: would-be hits whose stored reply was compared with the live one, by matched (false = a false hit)',
      labelNames: ['matched'] as const,
      registers: [registry],
    }),
    /** the semantic cache's observer (skills/cache/lookup.ts CacheObserver) */
    semanticCache: {
      lookedUp(result: 'hit' | 'miss' | 'error') {
        m.cacheLookups.inc({ result });
      },
      shadowCompared(matched: boolean) {
        m.cacheShadowCompared.inc({ matched: String(matched) });
      },
    },
    adapterLoads: new Counter({
      name: 'gw_adapter_loads_total',
      help: 'LoRA adapter loads the gateway asked of self-hosted destinations, by destination and result (ok, refused, failed)',
      labelNames: ['destination', 'result'] as const,
      registers: [registry],
    }),
    adapterEvictions: new Counter({
      name: 'gw_adapter_evictions_total',
      help: 'LoRA adapters unloaded to make room for another, by destination',
      labelNames: ['destination'] as const,
      registers: [registry],
    }),
    adapterLoadSeconds: new Histogram({
      name: 'gw_adapter_load_seconds',
      help: 'Time a LoRA adapter load took, evictions before it included, by destination',
      labelNames: ['destination'] as const,
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers: [registry],
    }),
    /** a finished call's usage and its catalog price (labels stay bounded: provider, never model) */
    recordUsage(provider: string, usage: Usage | undefined, costUsd: number) {
      if (usage) {
        m.tokens.inc([provider, 'input'], usage.input_tokens);
        m.tokens.inc([provider, 'output'], usage.output_tokens);
        m.tokens.inc([provider, 'cached'], usage.cached_tokens);
      }
      if (costUsd > 0) m.costUsd.inc([provider], costUsd);
    },
    /** a finished request's row: per-model and per-tenant usage, stream first byte, skill outcomes */
    recordRow(row: RequestRow, ttfbMs: number | undefined, skills: readonly SkillOutcome[]) {
      const model = models.value(row.model ?? 'none');
      const tenant = tenants.value(row.tenant_id);
      if (row.tokens_in > 0) {
        m.modelTokens.inc([model, 'input'], row.tokens_in);
        m.tenantTokens.inc([tenant, 'input'], row.tokens_in);
      }
      if (row.tokens_out > 0) {
        m.modelTokens.inc([model, 'output'], row.tokens_out);
        m.tenantTokens.inc([tenant, 'output'], row.tokens_out);
      }
      if (row.cost_usd > 0) {
        m.modelCostUsd.inc([model], row.cost_usd);
        m.tenantCostUsd.inc([tenant], row.cost_usd);
      }
      if (ttfbMs !== undefined) m.streamTtfb.observe([row.surface], ttfbMs / 1000);
      for (const s of skills) {
        m.skillOutcomes.inc([s.skill, s.outcome]);
        if (s.tokens_saved) m.skillTokensSaved.inc([s.skill], s.tokens_saved);
      }
      const pii = row.skills['pii_redaction'];
      if (pii?.outcome === 'applied') for (const [kind, n] of Object.entries(pii.detail?.kinds ?? {})) m.skillRedactions.inc([kind], n);
      if (row.skills['model_routing']?.outcome === 'applied') m.skillRouted.inc([model]);
      const fold = row.skills['agent_trajectory_compaction']?.detail;
      if (fold?.ledger_usd !== undefined) {
        const basis = fold.ledger_trued_up === true ? 'trued_up' : 'estimate';
        if (fold.ledger_usd < 0) m.foldLedgerUsd.inc(['lost', basis], -fold.ledger_usd);
        else m.foldLedgerUsd.inc(['saved', basis], fold.ledger_usd);
      }
    },
    setRowsBufferedSource(fn: () => number) {
      rowsBuffered = fn;
    },
    setSumsPendingSource(fn: () => number) {
      sumsPending = fn;
    },
    countAnswer(surface: string, status: number, provider: string, seconds: number) {
      m.requests.inc([surface, String(status), provider]);
      m.duration.observe([surface], seconds);
    },
    observeOverhead(surface: string, seconds: number) {
      m.overhead.observe([surface], seconds);
    },
    observeUpstreamLatency(provider: string, seconds: number) {
      m.upstreamLatency.observe([provider], seconds);
    },
    setInFlightSource(fn: () => number) {
      inFlight = fn;
    },
    setPoolStatsSource(fn: () => PoolStats[]) {
      poolStats = fn;
    },
    loopDelay,
  };

  new Gauge({
    name: 'gw_event_loop_delay_p99_seconds',
    help: 'p99 event-loop delay since the last scrape',
    registers: [registry],
    // across replicas the worst one is what matters
    aggregator: 'max',
    collect() {
      this.set(loopDelay.percentile(99) / 1e9);
      loopDelay.reset();
    },
  });
  new Gauge({
    name: 'gw_telemetry_rows_buffered',
    help: 'Request rows waiting to be appended to the Redis telemetry streams',
    registers: [registry],
    collect() {
      this.set(rowsBuffered());
    },
  });
  new Gauge({
    name: 'gw_telemetry_usage_sums_pending',
    help: 'Finished (or finishing) hours and days of usage queued in this process for summing into projections',
    registers: [registry],
    collect() {
      this.set(sumsPending());
    },
  });
  const poolGauge = (field: keyof Omit<PoolStats, 'origin'>) =>
    new Gauge({
      name: `gw_upstream_pool_${field}`,
      help: `undici pool ${field} per upstream origin`,
      labelNames: ['origin'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const s of poolStats()) this.set({ origin: s.origin }, s[field]);
      },
    });
  for (const f of ['connected', 'free', 'pending', 'running'] as const) poolGauge(f);
  return m;
}

export type Metrics = ReturnType<typeof createMetrics>;
