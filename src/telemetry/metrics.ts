import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { HotCounter, HotHistogram } from './hot-metrics.js';
import type { Usage } from '../providers/types.js';

const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export interface PoolStats {
  origin: string;
  connected: number;
  free: number;
  pending: number;
  running: number;
}

/** Every metric the gateway exports, created once per process. */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 });
  let poolStats: () => PoolStats[] = () => [];
  let inFlight: () => number = () => 0;
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();

  const m = {
    registry,
    requests: new HotCounter('gw_requests_total', 'Requests answered, by surface, status and provider', ['surface', 'status', 'provider'], registry),
    duration: new HotHistogram('gw_request_duration_seconds', 'Time from accept to the last byte, by surface', ['surface'], LATENCY_BUCKETS, registry),
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
    /** the skill pool's observer (skills/pool.ts PoolObserver) */
    skillPool: {
      threadRespawned(cause: 'backstop' | 'exit') {
        m.skillRespawns.inc({ cause });
      },
      stageTimed(stage: string, queueWaitMs: number, runMs: number) {
        m.skillQueueWait.observe([stage], queueWaitMs / 1000);
        m.skillRunTime.observe([stage], runMs / 1000);
      },
    },
    /** a finished call's usage and its catalog price (labels stay bounded: provider, never model) */
    recordUsage(provider: string, usage: Usage | undefined, costUsd: number) {
      if (usage) {
        m.tokens.inc([provider, 'input'], usage.input_tokens);
        m.tokens.inc([provider, 'output'], usage.output_tokens);
        m.tokens.inc([provider, 'cached'], usage.cached_tokens);
      }
      if (costUsd > 0) m.costUsd.inc([provider], costUsd);
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
