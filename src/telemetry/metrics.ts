import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
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
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();

  const m = {
    registry,
    requests: new Counter({
      name: 'gw_requests_total',
      help: 'Requests answered, by surface, status and provider',
      labelNames: ['surface', 'status', 'provider'] as const,
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'gw_request_duration_seconds',
      help: 'Time from accept to the last byte, by surface',
      labelNames: ['surface'] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    overhead: new Histogram({
      name: 'gw_gateway_overhead_seconds',
      help: 'Time to the response start that was not spent waiting on the upstream',
      labelNames: ['surface'] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    upstreamLatency: new Histogram({
      name: 'gw_upstream_latency_seconds',
      help: 'Time from dispatch to the upstream response start, by provider',
      labelNames: ['provider'] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    upstreamErrors: new Counter({
      name: 'gw_upstream_errors_total',
      help: 'Upstream calls that failed before or during the response, by provider and kind',
      labelNames: ['provider', 'kind'] as const,
      registers: [registry],
    }),
    tokens: new Counter({
      name: 'gw_tokens_total',
      help: 'Tokens read from relayed replies, by provider and kind (input, output, cached)',
      labelNames: ['provider', 'kind'] as const,
      registers: [registry],
    }),
    costUsd: new Counter({
      name: 'gw_cost_usd_total',
      help: 'Cost of relayed calls at catalog prices, by provider',
      labelNames: ['provider'] as const,
      registers: [registry],
    }),
    passthrough: new Counter({
      name: 'gw_passthrough_total',
      help: 'Calls relayed directly to the provider because a stage of the gateway itself failed (SPEC Fail-open), by stage',
      labelNames: ['stage'] as const,
      registers: [registry],
    }),
    inFlight: new Gauge({ name: 'gw_in_flight_requests', help: 'Requests accepted and not yet answered', registers: [registry] }),
    streamTimeouts: new Counter({
      name: 'gw_stream_timeouts_total',
      help: 'Streams closed by the gateway for idleness or the stream deadline',
      labelNames: ['reason'] as const,
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
    rateLimitLeases: new Counter({
      name: 'gw_rate_limit_lease_calls_total',
      help: 'Token leases a replica asked of the shared rate-limit bucket, by result (ok, error)',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    rateLimitWaits: new Counter({
      name: 'gw_rate_limit_waits_total',
      help: 'Requests that waited for a token lease: the replica held no tokens and did not know the shared bucket was dry',
      registers: [registry],
    }),
    /** a finished call's usage and its catalog price (labels stay bounded: provider, never model) */
    recordUsage(provider: string, usage: Usage | undefined, costUsd: number) {
      if (usage) {
        tokensOf(provider, 'input').inc(usage.input_tokens);
        tokensOf(provider, 'output').inc(usage.output_tokens);
        tokensOf(provider, 'cached').inc(usage.cached_tokens);
      }
      if (costUsd > 0) costOf(provider).inc(costUsd);
    },
    countAnswer(surface: string, status: number, provider: string, seconds: number) {
      answersOf(surface, String(status), provider).inc();
      durationOf(surface).observe(seconds);
    },
    observeOverhead(surface: string, seconds: number) {
      overheadOf(surface).observe(seconds);
    },
    observeUpstreamLatency(provider: string, seconds: number) {
      upstreamLatencyOf(provider).observe(seconds);
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
  // per-request metrics go through memoized label children
  const answersOf = childrenOf((surface, status, provider) => m.requests.labels(surface, status, provider));
  const durationOf = childrenOf((surface) => m.duration.labels(surface));
  const overheadOf = childrenOf((surface) => m.overhead.labels(surface));
  const upstreamLatencyOf = childrenOf((provider) => m.upstreamLatency.labels(provider));
  const tokensOf = childrenOf((provider, kind) => m.tokens.labels(provider, kind));
  const costOf = childrenOf((provider) => m.costUsd.labels(provider));
  return m;
}

/**
 * prom-client hashes a label object on every call, which showed in request
 * profiles; the hot path keeps one child per label values instead.
 */
function childrenOf<T>(labels: (...values: string[]) => T): (...values: string[]) => T {
  const memo = new Map<string, T>();
  return (...values) => {
    const key = values.join('\u0000');
    let child = memo.get(key);
    if (child === undefined) {
      child = labels(...values);
      memo.set(key, child);
    }
    return child;
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
