import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type pino from 'pino';
import type { Registry } from 'prom-client';
import { adminRoutes } from './api/admin.js';
import { consoleRoutes } from './api/console.js';
import { selfServiceRoutes } from './api/self-service.js';
import { scorecardRoutes } from './api/scorecard.js';
import { skillRoutes } from './api/skills.js';
import { telemetryRoutes } from './api/telemetry.js';
import { leverReport, publicRoutes } from './api/public.js';
import { openApiDocument, openApiRoutes } from './api/openapi.js';
import type { Route } from './http/types.js';
import { ProcessFeedback } from './lifecycle/feedback.js';
import type { ScorecardRowSink } from './lifecycle/rows.js';
import { ProcessRowWindow, type SampleSource } from './lifecycle/sources.js';
import { storedArms } from './lifecycle/stored-arms.js';
import { Scorecards } from './lifecycle/scorecards.js';
import { BreakerSweep, SOLE_PROCESS } from './lifecycle/sweep.js';
import { RedisSampleReader } from './stores/redis/sample-reader.js';
import { RedisSampleWriter } from './stores/redis/sample-writer.js';
import { Pipeline } from './pipeline/index.js';
import { queueWaitStage } from './pipeline/overload.js';
import { installCatalogFile } from './providers/catalog-file.js';
import { Destinations } from './destinations/index.js';
import { StoredKeyDestinations } from './destinations/stored-keys.js';
import { LocalCoolDowns, type CoolDowns } from './stores/cool-downs.js';
import { RedisCoolDowns } from './stores/redis/cool-downs.js';
import { destinationModels, readDestinationsFile } from './destinations/file.js';
import { joinCatalog } from './providers/catalog.js';
import { Providers, type OriginOverrides } from './providers/index.js';
import { createFront } from './server/front.js';
import { Ingress } from './server/ingress.js';
import { startMetricsApp } from './server/metrics-app.js';
import { loadUws, portRefusal } from './server/uws.js';
import { PROVIDER_IDS } from './providers/types.js';
import { armedSkills, loadSettings, SettingsError, upstreamSetting, type Settings } from './settings.js';
import { EmbeddedDocStore } from './stores/embedded/doc-store.js';
import { redisTargetOf } from './stores/redis/client.js';
import { RedisDocReader } from './stores/redis/doc-reader.js';
import { RedisDocStore } from './stores/redis/doc-store.js';
import { RedisLifecycleStore } from './stores/redis/lifecycle-store.js';
import { redisKeys } from './stores/redis/prefixes.js';
import type { DocStore } from './stores/types.js';
import { chatCompletionsRoutes } from './surfaces/chat-completions.js';
import { converseRoutes } from './surfaces/converse.js';
import { generateContentRoutes } from './surfaces/generate-content.js';
import { cloudxRoutes } from './surfaces/cloudx.js';
import { countTokensRoutes } from './surfaces/count-tokens.js';
import { executeRoutes } from './surfaces/execute.js';
import { SURFACES } from './surfaces/index.js';
import { messagesRoutes } from './surfaces/messages.js';
import { parityRelayRoutes } from './surfaces/parity-relay.js';
import { responsesRoutes } from './surfaces/responses.js';
import { TenantAdmin } from './tenancy/admin.js';
import { firstRunHint } from './first-run.js';
import { devBanner, startDevEnvironment, storeDemoProviderKeys } from './dev.js';
import { Keyring } from './tenancy/crypto.js';
import { Directory } from './tenancy/directory.js';
import { Entitlement } from './tenancy/entitlement.js';
import { IdpVerifier } from './tenancy/idp.js';
import { ModelAccess } from './tenancy/model-access.js';
import { KeySkills, PER_KEY_SKILLS, StoredTransitionLog, type SkillId } from './tenancy/skills.js';
import { SemanticCache } from './skills/cache/lookup.js';
import { stageContext, type ContextSources } from './skills/context.js';
import { SkillEngine } from './skills/engine.js';
import { stageHalves } from './skills/halves.js';
import type { CacheStore } from './stores/cache.js';
import { EmbeddedCacheStore } from './stores/embedded/cache-store.js';
import { RedisCacheStore } from './stores/redis/cache-store.js';
import { EngineSkillsStage } from './skills/pipeline-stage.js';
import { SkillPool } from './skills/pool.js';
import { tokenThread } from './providers/usage/tokenizer.js';
import { SKILLS, skillLevers, type SkillRow } from './skills/table.js';
import { VendorKeys } from './tenancy/vendor-keys.js';
import { dedicatedTenantStage } from './policy/dedicated.js';
import { modelAccessStage } from './policy/model-access.js';
import { rateLimitStage } from './policy/rate-limit.js';
import { residencyStage } from './policy/residency.js';
import { spendCapStage } from './policy/spend-cap.js';
import { RateLimiter } from './tenancy/rate-limit.js';
import { SpendCaps } from './tenancy/spend-cap.js';
import { EmbeddedMeterStore } from './stores/embedded/meter-store.js';
import type { MeterStore } from './stores/meter.js';
import { RedisMeterStore } from './stores/redis/meter-store.js';
import { answerFleetScrapes, FleetMetrics } from './telemetry/fleet-metrics.js';
import { createLogger, createLogging, type Logger } from './telemetry/log.js';
import { createMetrics, type Metrics } from './telemetry/metrics.js';
import { LoadMonitor } from './telemetry/load-monitor.js';
import { InspectorRing } from './telemetry/ring.js';
import { TelemetryRows } from './telemetry/row-sink.js';
import { StreamReader } from './telemetry/stream-reader.js';
import { StreamWriter } from './telemetry/stream-writer.js';
import type { SumOutcome } from './telemetry/usage-compactor.js';
import { Upstream } from './upstream/client.js';
import { OriginHealth } from './upstream/health.js';
import { UpstreamInflight } from './upstream/inflight.js';

export interface RunningGateway {
  port: number;
  /** the GW_METRICS_PORT listener's port, when set */
  metricsPort?: number;
  log: Logger;
  /** this replica's metrics, for the primary's aggregated scrape */
  registry: Registry;
  /** where every finished request's row goes for the scorecards: the durable samples store with Redis, else the process's rolling window */
  scorecardRows: ScorecardRowSink;
  /** the breaker sweep (it runs on its own timer; tests run a period at once) */
  sweep: BreakerSweep;
  /** hands batched log lines to the destination now */
  flushLogs(): void;
  /** stops accepting, lets in-flight requests finish (bounded), releases stores and pools */
  close(): Promise<void>;
}

export interface StartOptions {
  /** where logs go (tests capture them); stdout by default */
  logDestination?: pino.DestinationStream;
  /** the skills table this replica runs; the shipped table (SKILLS) by default. Tests add rows of their own evaluators. */
  skillRows?: readonly SkillRow[];
  /** a replica whose primary checked the port: it joins its siblings there (SO_REUSEPORT); otherwise the port is bound exclusively */
  sharePort?: boolean;
}

function openStore(settings: Settings, log: Logger, metrics?: Metrics): DocStore {
  const redis = redisTargetOf(settings);
  return redis
    ? new RedisDocStore(redis, redisKeys(settings.GW_REDIS_PREFIX), log, { onDataLoss: () => metrics?.storeDataLoss.inc() })
    : new EmbeddedDocStore(settings.GW_DATA_DIR, log);
}

/** Where a failed destination's cool-down is kept: Redis, shared by every replica, when set; else in process. */
function openCoolDowns(settings: Settings): CoolDowns {
  const redis = redisTargetOf(settings);
  return redis ? new RedisCoolDowns(redis, redisKeys(settings.GW_REDIS_PREFIX)) : new LocalCoolDowns();
}

/** What holds the shared state, as /healthz's levers and the start line name it. */
const storeKind = (settings: Settings): 'redis' | 'redis_cluster' | 'embedded' => (settings.GW_REDIS_CLUSTER ? 'redis_cluster' : settings.GW_REDIS_URL ? 'redis' : 'embedded');

/** rows the process's scorecard window holds (all tenants): the answer without a durable store */
const SCORECARD_WINDOW_ROWS = 50_000;
/** the skills the scorecards read: the rows both sample stores keep are the requests these ran in */
const SCORED_SKILLS: ReadonlySet<string> = new Set(PER_KEY_SKILLS);
/** task outcomes kept in process without Redis */
const FEEDBACK_CAPACITY = 100_000;

/** The semantic cache's store: Redis, shared by every replica, when set; else in process, bounded. */
function openCacheStore(settings: Settings): CacheStore {
  const ttlMs = settings.GW_CACHE_TTL_S * 1000;
  const redis = redisTargetOf(settings);
  return redis
    ? new RedisCacheStore(redis, redisKeys(settings.GW_REDIS_PREFIX), { ttlMs })
    : new EmbeddedCacheStore({ maxEntries: settings.GW_CACHE_MAX_ENTRIES, maxBytes: settings.GW_CACHE_MAX_BYTES, ttlMs });
}

function openMeter(settings: Settings): MeterStore {
  const redis = redisTargetOf(settings);
  return redis ? new RedisMeterStore(redis, redisKeys(settings.GW_REDIS_PREFIX)) : new EmbeddedMeterStore();
}

/** leverReport's names of the guardrail stages of the skills table */
const GUARDRAIL_LEVERS: Readonly<Record<string, string>> = { guardrails: 'guardrail_regex', guardrails_model: 'guardrail_classifier' };

/** The skills table's stages the engine runs on this replica (a mode other than off), as leverReport names them. */
const runningStages = (settings: Settings, rows: readonly SkillRow[]): Set<string> =>
  new Set(skillLevers(settings, rows).stages.filter((s) => s.mode !== 'off').map((s) => GUARDRAIL_LEVERS[s.id] ?? s.id));

/** This replica's skill threads as /healthz shows them. */
function poolState(pool: SkillPool) {
  const { threads, queued, inFlight } = pool.stats;
  return { threads, queued, in_flight: inFlight };
}

/** GW_TELEMETRY_RETENTION_H in whole milliseconds: Redis takes expiry times and stream ids in no finer unit */
const retentionMsOf = (settings: Settings): number => Math.round(settings.GW_TELEMETRY_RETENTION_H * 3_600_000);

/** The Redis telemetry streams: a writer and a reader on connections of their own; none without Redis. */
function openTelemetry(settings: Settings, log: Logger, metrics: Metrics): { writer: StreamWriter; reader: StreamReader } | undefined {
  const target = redisTargetOf(settings);
  if (!target) return undefined;
  const retentionMs = retentionMsOf(settings);
  const common = { target, prefix: settings.GW_REDIS_PREFIX, retentionMs, onSumOutcome: (outcome: SumOutcome) => metrics.usageSums.inc({ outcome }) };
  const writer = new StreamWriter({
    ...common,
    maxBuffered: settings.GW_TELEMETRY_BUFFER_ROWS,
    log,
    onDropped: (n) => metrics.telemetryRowsDropped.inc(n),
    onAppended: (n) => metrics.telemetryRowsAppended.inc(n),
    onAppendFailed: () => metrics.telemetryAppendFailures.inc(),
    sumDelayMs: settings.GW_TELEMETRY_SUM_DELAY_S * 1000,
  });
  const reader = new StreamReader({ ...common, boundMs: settings.GW_TELEMETRY_READ_TIMEOUT_S * 1000 });
  metrics.setRowsBufferedSource(() => writer.buffered);
  metrics.setSumsPendingSource(() => writer.pendingSums + reader.pendingSums);
  return { writer, reader };
}

/** Where the scorecards' rows go and where their samples are read: Redis for the fleet, else the process's window. */
async function openScorecardSamples(
  settings: Settings,
  skills: KeySkills,
  log: Logger,
  metrics: Metrics,
  releases: Array<() => unknown>,
): Promise<{ sink: ScorecardRowSink; source: SampleSource }> {
  const target = redisTargetOf(settings);
  if (!target) {
    const window = new ProcessRowWindow(SCORECARD_WINDOW_ROWS, SCORED_SKILLS);
    return { sink: window, source: window };
  }
  const keys = redisKeys(settings.GW_REDIS_PREFIX);
  const writer = new RedisSampleWriter({
    target,
    keys,
    retentionMs: retentionMsOf(settings),
    maxBuffered: settings.GW_TELEMETRY_BUFFER_ROWS,
    skills: SCORED_SKILLS,
    epochOf: (keyId, skill) => skills.latestTransition(keyId, skill as SkillId)?.id ?? '',
    log,
    onDropped: (n) => metrics.scorecardSamplesDropped.inc(n),
    onAppendFailed: () => metrics.scorecardSamplesFailures.inc(),
  });
  await writer.start();
  releases.push(() => writer.close(settings.GW_SHUTDOWN_GRACE_S * 1000));
  const reader = new RedisSampleReader({ target, keys, boundMs: settings.GW_TELEMETRY_READ_TIMEOUT_S * 1000 });
  await reader.start();
  releases.push(() => reader.close());
  return { sink: writer, source: reader };
}

function originOverrides(s: Settings): OriginOverrides {
  return Object.fromEntries(PROVIDER_IDS.map((p) => [p, s[upstreamSetting(p)]]));
}

/** One replica: settings → stores → pipeline → routes → the uWS front. */
export async function startGateway(settings: Settings, opts: StartOptions = {}): Promise<RunningGateway> {
  // the catalog prices every call: a bad file stops the start, naming each bad entry
  installCatalogFile(settings.GW_CATALOG_FILE);
  // a bad destinations file stops the start, naming each bad entry
  const destinationEntries = settings.GW_DESTINATIONS_FILE ? readDestinationsFile(settings.GW_DESTINATIONS_FILE) : [];
  joinCatalog(destinationModels(destinationEntries));
  const logging = createLogging(settings.GW_LOG_LEVEL, opts.logDestination);
  const log = logging.log;
  const { uws, native } = loadUws(settings.GW_ALLOW_UWS_FALLBACK === '1');
  if (!native) log.warn('running on the uWebSockets.js JS fallback: GW_ALLOW_UWS_FALLBACK=1');
  // what each started part needs to let go, in start order; released in reverse on close, or if a later part fails to start
  const releases: Array<() => unknown> = [];
  const release = async () => {
    for (const r of releases.splice(0).reverse()) await Promise.resolve().then(r).catch(() => undefined);
  };
  try {
    const metrics = createMetrics({ streamDeadlineS: settings.GW_STREAM_DEADLINE_S });
    releases.push(() => metrics.loopDelay.disable());
    const load = new LoadMonitor({
      windowMs: settings.GW_LOOP_STALL_WINDOW_S * 1000,
      stallShedShare: settings.GW_LOOP_STALL_SHED_SHARE,
      ingressBudget: settings.GW_INGRESS_BUDGET,
      countShed: (where) => metrics.shed.inc({ where }),
    });
    load.start();
    releases.push(() => load.stop());
    const store = openStore(settings, log, metrics);
    await store.start();
    releases.push(() => store.close());
    const directory = new Directory(store);
    const admin = new TenantAdmin(store, directory, settings.GW_DEFAULT_RPS_CAP);
    if (settings.GW_BOOTSTRAP) log.info(await admin.bootstrap(settings.GW_BOOTSTRAP), 'bootstrap applied');
    // replicas (sharePort) leave the hint to the first-started process, so it is printed once
    const hint = opts.sharePort ? undefined : firstRunHint(admin.listOrgs().length, settings.GW_ADMIN_KEY !== undefined);
    if (hint) log.info({ first_run: true }, hint);
    const providers = new Providers(originOverrides(settings));
    const upstream = new Upstream({ connectionsPerOrigin: settings.GW_UPSTREAM_CONNECTIONS, headersTimeoutMs: settings.GW_REQUEST_DEADLINE_S * 1000 });
    releases.push(() => upstream.close());
    metrics.setPoolStatsSource(() => upstream.stats());
    const ring = new InspectorRing(100);
    const telemetry = openTelemetry(settings, log, metrics);
    if (telemetry) {
      await telemetry.writer.start();
      releases.push(() => telemetry.writer.close(settings.GW_SHUTDOWN_GRACE_S * 1000));
      await telemetry.reader.start();
      releases.push(() => telemetry.reader.close());
    }
    const originHealth = new OriginHealth();
    const destinations =
      destinationEntries.length === 0 ? undefined : new Destinations(destinationEntries, { upstream, health: originHealth, metrics, log, defaultMaxInflight: settings.GW_UPSTREAM_MAX_INFLIGHT });
    await destinations?.start();
    const meter = openMeter(settings);
    await meter.start();
    releases.push(() => meter.close());
    const spendCaps = new SpendCaps({ docs: store, meter, metrics, log });
    releases.push(() => spendCaps.close());
    const rateLimiter = new RateLimiter({ meter, metrics, log });
    const coolDowns = openCoolDowns(settings);
    await coolDowns.start();
    releases.push(() => coolDowns.close());
    const storeTimeoutMs = settings.GW_BYOK_STORE_TIMEOUT_S * 1000;
    const keyring = Keyring.fromSettings(settings.GW_SECRETS_KEY, settings.GW_SECRETS_KEY_PREVIOUS);
    if (keyring.ephemeral) log.info('GW_SECRETS_KEY unset: stored provider keys are sealed under a per-process key and live in memory only');
    const redis = redisTargetOf(settings);
    const docReader = redis ? new RedisDocReader(redis, redisKeys(settings.GW_REDIS_PREFIX)) : undefined;
    await docReader?.start();
    if (docReader) releases.push(() => docReader.close());
    const vendorKeys = new VendorKeys(store, keyring, { timeoutMs: storeTimeoutMs, reader: docReader, cloudxOverridden: providers.isOverridden('cloudx'), rules: (p) => providers.get(p).storedCredential, log });
    await vendorKeys.start();
    const modelAccess = new ModelAccess(store);
    const lifecycleStore = redis ? new RedisLifecycleStore(redis, redisKeys(settings.GW_REDIS_PREFIX), randomUUID()) : undefined;
    await lifecycleStore?.start();
    if (lifecycleStore) releases.push(() => lifecycleStore.close());
    const keySkills = new KeySkills(store, storeTimeoutMs, lifecycleStore ?? new StoredTransitionLog(store), (obj, msg) => log.warn(obj, msg));
    const armed = armedSkills(settings);
    const feedback = lifecycleStore ?? new ProcessFeedback(FEEDBACK_CAPACITY);
    // with Redis every replica adds its requests' samples to the fleet's and reads them back; without, the process keeps its own rows
    const { sink: scorecardRows, source: sampleSource } = await openScorecardSamples(settings, keySkills, log, metrics, releases);
    const scorecards = new Scorecards({ samples: sampleSource, feedback, skills: keySkills, directory, armed: new Set(armed) });
    // each replica process has its own pool of skill threads
    const skillRows = opts.skillRows ?? SKILLS;
    const skillPool = new SkillPool(
      {
        threads: settings.GW_SKILL_THREADS,
        minThreads: settings.GW_SKILL_MIN_THREADS,
        shadowThreads: settings.GW_SKILL_SHADOW_THREADS,
        tasksPerThread: settings.GW_SKILL_TASKS_PER_THREAD,
        maxQueue: settings.GW_SKILL_MAX_QUEUE,
        idleTimeoutMs: settings.GW_SKILL_IDLE_TIMEOUT_MS,
        abortGraceMs: settings.GW_SKILL_ABORT_GRACE_MS,
      },
      skillRows,
      metrics.skillPool,
    );
    releases.push(() => skillPool.close());
    if (skillRows[0]) await skillPool.warm(skillRows[0].id);
    // the main thread's token counts run on a thread of their own (tokenizer.ts); it lives as long as the process
    await tokenThread.start();
    const cacheStore = openCacheStore(settings);
    await cacheStore.start();
    releases.push(() => cacheStore.close());
    const semanticCache = new SemanticCache(cacheStore, { similarity: settings.GW_CACHE_SIMILARITY, maxBytes: settings.GW_CACHE_MAX_BYTES }, metrics.semanticCache);
    const contextSources: ContextSources = {
      allowedModels: (org) => modelAccess.models(org),
      storedProviders: (org) => vendorKeys.list(org).map((k) => k.provider),
      selfHosted: destinations ? ['selfhosted'] : [],
      foldParams: (key) => keySkills.config(key).skill_params.agent_trajectory_compaction,
    };
    const skills = new EngineSkillsStage(new SkillEngine({ pool: skillPool, modes: keySkills, settings, rows: skillRows, shedShadow: () => load.shouldShedShadow() }), keySkills, {
      context: (input) => stageContext(contextSources, input),
      half: stageHalves(semanticCache),
    });
    const idp =
      settings.GW_IDP_ISSUER && settings.GW_IDP_JWKS
        ? await IdpVerifier.create({ issuer: settings.GW_IDP_ISSUER, jwks: settings.GW_IDP_JWKS, audience: settings.GW_IDP_AUDIENCE, groupMap: settings.GW_IDP_GROUP_MAP })
        : undefined;
    const entitlement = new Entitlement({ directory, configSecret: settings.GW_CONFIG_SECRET, adminKey: settings.GW_ADMIN_KEY, idp, dedicatedTenant: settings.GW_DEDICATED_TENANT });
    const admission = [
      queueWaitStage(settings.GW_QUEUE_WAIT_MAX_S * 1000, load),
      ...(settings.GW_DEDICATED_TENANT ? [dedicatedTenantStage(settings.GW_DEDICATED_TENANT, directory)] : []),
      ...(settings.GW_ALLOWED_REGIONS ? [residencyStage(settings.GW_ALLOWED_REGIONS)] : []),
      modelAccessStage(modelAccess),
      rateLimitStage(rateLimiter),
    ];
    const metering = [spendCapStage(spendCaps)];
    const pipeline = new Pipeline({
      directory,
      providers,
      upstream,
      metrics,
      log,
      rows: new TelemetryRows(ring, telemetry?.writer, metrics, log, {
        storedArms: storedArms(keySkills),
        onRow: (row) => scorecardRows.record(row),
      }),
      health: originHealth,
      inflight: new UpstreamInflight(settings.GW_UPSTREAM_MAX_INFLIGHT, load),
      limits: { streamIdleMs: settings.GW_STREAM_IDLE_S * 1000, streamDeadlineMs: settings.GW_STREAM_DEADLINE_S * 1000, maxReplyBytes: settings.GW_MAX_REPLY_BYTES },
      storedKeys: vendorKeys,
      admission,
      metering,
      destinations,
      storedDestinations: new StoredKeyDestinations(coolDowns, settings.GW_DESTINATION_COOLDOWN_S * 1000),
      skills,
    });

    const levers = leverReport({
      policy: [...admission, ...metering].map((p) => p.name),
      running: runningStages(settings, skillRows),
      configured: {
        guardrails_classifier_mode: settings.GW_GUARDRAILS_MODEL_MODE,
        auto_rollback: armed,
        ingress_budget: settings.GW_INGRESS_BUDGET ?? null,
        store: storeKind(settings),
      },
    });
    let inFlight = () => 0;
    const startedAt = Date.now();
    const routes: Route[] = [
      ...publicRoutes(
        providers,
        {
          origins: originHealth,
          levers: () => ({ ...levers, skill_engine: { state: 'running', ...skillLevers(settings, skillRows), pool: poolState(skillPool) } }),
          metrics,
          load,
          startedAt,
          uwsNative: native,
          listsSelfHosted: destinations && ((m) => destinations.lists(m)),
        },
        settings.GW_METRICS_PUBLIC === '1',
      ),
      ...consoleRoutes(),
      ...adminRoutes(admin, settings.GW_ADMIN_KEY, log),
      ...selfServiceRoutes({ entitlement, directory, vendorKeys, modelAccess, spendCaps, skills: keySkills }),
      ...skillRoutes(entitlement, keySkills),
      ...telemetryRoutes({ entitlement, directory, ring, reader: telemetry?.reader }),
      ...executeRoutes(pipeline, keySkills),
      ...scorecardRoutes(entitlement, scorecards, feedback),
      ...chatCompletionsRoutes(pipeline),
      ...responsesRoutes(pipeline),
      ...cloudxRoutes(pipeline),
      ...messagesRoutes(pipeline),
      ...countTokensRoutes(pipeline),
      ...parityRelayRoutes(pipeline),
      ...generateContentRoutes(pipeline),
      ...converseRoutes(pipeline),
    ];
    // generated from the routes just assembled: one without an OPERATIONS entry stops the start, naming it
    routes.push(...openApiRoutes(openApiDocument(routes)));
    const front = createFront({
      uws,
      routes,
      defaultSurface: SURFACES.public,
      maxBodyBytes: settings.GW_MAX_BODY_BYTES,
      requestDeadlineMs: settings.GW_REQUEST_DEADLINE_S * 1000,
      log,
      accessLog: logging.access,
      metrics,
      ingress: new Ingress({ monitor: load, budget: settings.GW_INGRESS_BUDGET, heavyBytes: settings.GW_HEAVY_BODY_BYTES }),
      monitor: load,
    });
    inFlight = () => front.inFlight;
    const sweep = new BreakerSweep({
      scorecards,
      skills: keySkills,
      directory,
      armed,
      lease: lifecycleStore ?? SOLE_PROCESS,
      periodMs: settings.GW_BREAKER_SWEEP_S * 1000,
      observer: metrics.breakerSweep,
      log,
    });
    sweep.start();
    releases.push(() => sweep.stop());
    metrics.setInFlightSource(inFlight);
    const port = await front.listen(settings.GW_HOST, settings.GW_PORT, opts.sharePort);
    // idle keep-alive connections would otherwise hold the process until their clients let go
    releases.push(() => front.closeConnections());
    log.info({ host: settings.GW_HOST, port, store: storeKind(settings) }, 'gateway listening');
    const metricsApp = settings.GW_METRICS_PORT === undefined ? undefined : await startMetricsApp(uws, settings.GW_HOST, settings.GW_METRICS_PORT, metrics.registry, log);
    if (metricsApp) releases.push(() => metricsApp.close());

    return {
      port,
      metricsPort: metricsApp?.port,
      log,
      registry: metrics.registry,
      scorecardRows,
      sweep,
      flushLogs: () => logging.flushBatches(),
      async close() {
        // /readyz answers 503 from here on (to a balancer still holding a connection)
        load.drain();
        front.stopListening();
        const deadline = Date.now() + settings.GW_SHUTDOWN_GRACE_S * 1000;
        while (front.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        await release();
        logging.flush();
      },
    };
  } catch (err) {
    await release();
    logging.flush();
    throw err;
  }
}

const WORKER_FLAG = '--gateway-worker';
const WORKER_READY = 'gateway-worker-ready';

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

/**
 * Checks that no other process holds the port (a probe bound without
 * SO_REUSEPORT fails beside any listener, a sharing one included) and gives
 * it back for the replicas; port 0 picks a free one they all share.
 */
function probePort(host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => reject(err.code === 'EADDRINUSE' ? new Error(portRefusal(host, port)) : err));
    probe.listen(port, host, () => {
      const { port: bound } = probe.address() as AddressInfo;
      probe.close(() => resolve(bound));
    });
  });
}

/**
 * Replicas are processes sharing the port through SO_REUSEPORT (uWS sets it),
 * so the kernel spreads connections and one crash does not take the others.
 * The port is the gateway's alone: the primary refuses one another process
 * holds before forking, and a single process binds it exclusively.
 * A replica that dies is restarted; when the first replicas cannot start at
 * all (Redis unreachable, a bad state file) the primary stops with them
 * instead of restarting them forever.
 */
async function runPrimary(settings: Settings): Promise<void> {
  if (settings.GW_DEV === '1') {
    if (settings.GW_BOOTSTRAP) fail('gateway: GW_DEV bootstraps its own demo org and key; unset GW_BOOTSTRAP');
    return runDev(settings.GW_ADMIN_KEY);
  }
  if (settings.GW_WORKERS === 1) {
    const gw = await startGateway(settings);
    const stop = stopOnce(gw);
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    return;
  }
  const log = createLogger(settings.GW_LOG_LEVEL);
  // bootstrap once, before replicas race to apply it
  if (settings.GW_BOOTSTRAP) {
    const store = openStore(settings, log);
    await store.start();
    await new TenantAdmin(store, new Directory(store), settings.GW_DEFAULT_RPS_CAP).bootstrap(settings.GW_BOOTSTRAP);
    await store.close();
  }
  // refuse a port another process holds (another gateway would share it silently); port 0: one the replicas all share
  const port = await probePort(settings.GW_HOST, settings.GW_PORT);
  // the metrics port is the primary's: it answers for the whole host
  const { GW_BOOTSTRAP: _skip, GW_METRICS_PORT: _metricsPort, ...inherited } = process.env;
  const env = { ...inherited, GW_PORT: String(port) };
  const children = new Set<ChildProcess>();
  if (settings.GW_METRICS_PORT !== undefined) {
    const { uws } = loadUws(settings.GW_ALLOW_UWS_FALLBACK === '1');
    const app = await startMetricsApp(uws, settings.GW_HOST, settings.GW_METRICS_PORT, new FleetMetrics(() => children), log);
    log.info({ port: app.port }, 'fleet metrics listening');
  }
  let stopping = false;
  let anyReady = false;
  const spawn = (index: number) => {
    if (stopping) return;
    const child = fork(fileURLToPath(import.meta.url), [WORKER_FLAG], { env, execArgv: process.execArgv });
    children.add(child);
    child.on('message', (message) => {
      if (message === WORKER_READY) anyReady = true;
    });
    child.on('exit', (code, signal) => {
      children.delete(child);
      if (stopping) {
        if (children.size === 0) process.exit(0);
        return;
      }
      if (!anyReady) {
        stopping = true;
        for (const c of children) c.kill('SIGTERM');
        fail(`gateway: replica ${index} could not start (exit ${code ?? signal}); stopping`);
      }
      log.error({ index, code, signal }, 'replica exited; restarting in 1 s');
      setTimeout(() => spawn(index), 1000);
    });
  };
  for (let i = 0; i < settings.GW_WORKERS; i++) spawn(i);
  log.info({ workers: settings.GW_WORKERS, port }, 'replicas started');
  const stop = () => {
    stopping = true;
    if (children.size === 0) process.exit(0);
    for (const c of children) c.kill('SIGTERM');
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

/** GW_DEV=1: one process in front of the bundled fake vendors, with a demo org and key printed once. */
async function runDev(adminKey: string | undefined): Promise<void> {
  const dev = await startDevEnvironment(adminKey);
  try {
    const settings = { ...loadSettings({ ...process.env, ...dev.env }), GW_WORKERS: 1 };
    const gw = await startGateway(settings);
    const url = `http://${settings.GW_HOST === '0.0.0.0' ? '127.0.0.1' : settings.GW_HOST}:${gw.port}`;
    await storeDemoProviderKeys(url, dev.apiKey);
    process.stdout.write(`${devBanner(url, dev)}\n`);
    const stop = stopOnce(gw, dev.stop);
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  } catch (err) {
    dev.stop();
    throw err;
  }
}

/** A shutdown that runs once, however many signals arrive, and exits non-zero if closing fails. */
function stopOnce(gw: RunningGateway, alsoStop: () => void = () => undefined): () => void {
  let stopping = false;
  return () => {
    if (stopping) return;
    stopping = true;
    alsoStop();
    gw.close().then(
      () => process.exit(0),
      (err: unknown) => fail(`gateway: shutdown failed: ${err instanceof Error ? err.message : String(err)}`),
    );
  };
}

async function runWorker(settings: Settings): Promise<void> {
  const gw = await startGateway(settings, { sharePort: true });
  answerFleetScrapes(gw.registry);
  const stop = stopOnce(gw);
  process.once('SIGTERM', stop);
  // the primary is gone (killed outright): do not linger as an orphan holding the port
  process.once('disconnect', stop);
  // Ctrl-C reaches the whole process group; the primary decides
  process.once('SIGINT', () => undefined);
  process.send?.(WORKER_READY);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  let settings: Settings;
  try {
    settings = loadSettings();
  } catch (err) {
    fail(err instanceof SettingsError ? `gateway: ${err.message}` : String(err));
  }
  const role = process.argv.includes(WORKER_FLAG) ? runWorker : runPrimary;
  role(settings).catch((err: unknown) => fail(`gateway: cannot start: ${err instanceof Error ? err.message : String(err)}`));
}
