import { cpus } from 'node:os';
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject } from 'ajv';
import { PROVIDER_IDS, type VendorId } from './providers/types.js';
import { isPerKeySkill, PER_KEY_SKILLS } from './tenancy/skills.js';

/**
 * Every GW_ deployment setting in one schema. Environment values are strings;
 * Ajv coerces them to the declared types and fills the defaults.
 */
/**
 * Marks a setting whose value is a credential, or may carry one (a Redis URL's
 * password): a start-up message names it but never prints its value.
 */
const SECRET = { secret: true } as const;

const Seconds = (def: number, description: string) =>
  Type.Number({ exclusiveMinimum: 0, default: def, description });
const Origin = (description: string) =>
  Type.Optional(Type.String({ pattern: '^https?://[^/?#\\s]+$', description }));

/** GW_UPSTREAM_<PROVIDER>: one per provider in the provider list, so a new provider brings its own */
export const upstreamSetting = <P extends VendorId>(provider: P) => `GW_UPSTREAM_${provider.toUpperCase() as Uppercase<P>}` as const;

function upstreamOverrideSettings() {
  const entries = PROVIDER_IDS.map((p) => [upstreamSetting(p), Origin(`origin override for ${p}: replaces its origin for every region, resource or project`)]);
  return Object.fromEntries(entries) as Record<ReturnType<typeof upstreamSetting<VendorId>>, ReturnType<typeof Origin>>;
}

export const SettingsSchema = Type.Object({
  GW_HOST: Type.String({ default: '0.0.0.0', minLength: 1 }),
  GW_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
  GW_WORKERS: Type.Optional(Type.Integer({ minimum: 1, maximum: 256, description: 'replicas sharing the port; default: CPUs with Redis, 1 embedded' })),
  GW_REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://', ...SECRET })),
  GW_REDIS_CLUSTER: Type.Optional(
    Type.String({
      // host:port seeds, optionally after redis:// or rediss:// with the credentials every node shares (parsed in src/stores/redis/client.ts)
      pattern: '^(rediss?://([^@/\\s]*@)?)?[^,:@/\\s]+:[0-9]{1,5}(,[^,:@/\\s]+:[0-9]{1,5})*$',
      description: 'Redis Cluster seed nodes: `host:port,host:port`, or `rediss://user:password@host:port,host:port` with TLS and the credentials every node shares',
      ...SECRET,
    }),
  ),
  GW_REDIS_PREFIX: Type.String({ pattern: '^[A-Za-z0-9_:.-]{1,64}$', default: 'gw:', description: 'namespace of every Redis key and channel' }),
  GW_DATA_DIR: Type.Optional(Type.String({ minLength: 1 })),
  GW_ADMIN_KEY: Type.Optional(Type.String({ minLength: 16, ...SECRET })),
  GW_CONFIG_SECRET: Type.Optional(Type.String({ minLength: 16, ...SECRET })),
  GW_SECRETS_KEY: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9+/]{43}=$', description: '32 bytes, base64', ...SECRET })),
  GW_SECRETS_KEY_PREVIOUS: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9+/]{43}=(,[A-Za-z0-9+/]{43}=)*$',
      description: 'comma-separated keys rotated out: still open stored secrets, which are resealed under GW_SECRETS_KEY at start',
      ...SECRET,
    }),
  ),
  GW_BOOTSTRAP: Type.Optional(Type.String({ minLength: 1 })),
  GW_CATALOG_FILE: Type.Optional(Type.String({ minLength: 1, description: 'JSON file of model prices that override or add to the shipped catalog (docs/operations.md, Model prices)' })),
  ...upstreamOverrideSettings(),
  GW_DESTINATIONS_FILE: Type.Optional(Type.String({ minLength: 1, description: 'JSON file of self-hosted model servers (OpenAI-compatible, e.g. vLLM) with their models, LoRA adapters and prices (docs/operations.md, Self-hosted destinations)' })),
  GW_UPSTREAM_CONNECTIONS: Type.Integer({ minimum: 1, maximum: 65536, default: 256, description: 'max sockets per upstream origin' }),
  GW_UPSTREAM_MAX_INFLIGHT: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 256, description: 'requests in flight per upstream origin, and per self-hosted destination whose entry sets no max_inflight: past it a call there goes to its next destination or fallback, and is shed (503 overloaded, without x-gw-error) when none has room; a call that can go to one origin only holds its place there from the check before the skills' }),
  GW_DESTINATION_COOLDOWN_S: Type.Integer({ minimum: 1, maximum: 3600, default: 30, description: 'how long a stored provider key that failed (could not connect, 429, 5xx) is tried only after the healthy ones (longer when the vendor\'s Retry-After or retry-after-ms asks, up to 600 s), shared by the replicas through Redis (docs/operations.md, Merit-order dispatch)' }),
  GW_MAX_REPLY_BYTES: Type.Integer({ minimum: 1024, default: 64 * 1024 * 1024, description: 'largest non-streamed upstream reply the gateway buffers; past it the upstream is cancelled and the answer is 502 upstream_unavailable' }),
  GW_LOG_LEVEL: Type.Union(
    [Type.Literal('fatal'), Type.Literal('error'), Type.Literal('warn'), Type.Literal('info'), Type.Literal('debug'), Type.Literal('trace'), Type.Literal('silent')],
    { default: 'info' },
  ),
  GW_METRICS_PORT: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
  GW_METRICS_PUBLIC: Type.Union([Type.Literal('0'), Type.Literal('1')], { default: '1' }),
  GW_ALLOW_UWS_FALLBACK: Type.Union([Type.Literal('0'), Type.Literal('1')], { default: '0' }),
  GW_MAX_BODY_BYTES: Type.Integer({ minimum: 1024, default: 32 * 1024 * 1024 }),
  GW_DEFAULT_RPS_CAP: Type.Number({ exclusiveMinimum: 0, default: 50 }),
  GW_REQUEST_DEADLINE_S: Seconds(600, 'handler must start its response within this'),
  GW_STREAM_IDLE_S: Seconds(300, 'a stream silent this long is closed with gateway_timeout'),
  GW_STREAM_DEADLINE_S: Seconds(3600, 'a stream open this long is closed with gateway_timeout'),
  GW_QUEUE_WAIT_MAX_S: Seconds(10, 'engine entry shed threshold'),
  GW_BYOK_STORE_TIMEOUT_S: Seconds(30, 'bound on stored-provider-key store calls'),
  GW_LOOP_STALL_SHED_SHARE: Type.Number({ minimum: 0, maximum: 1, default: 0.5 }),
  GW_LOOP_STALL_WINDOW_S: Seconds(10, 'window of the loop-stall share'),
  GW_INGRESS_BUDGET: Type.Optional(Type.Integer({ minimum: 1, description: 'in-flight request bytes before shedding' })),
  GW_HEAVY_BODY_BYTES: Type.Integer({ minimum: 1, default: 65536, description: 'a body this large or larger is heavy: shed while the event loop is stalled' }),
  GW_SKILL_AUTO_ROLLBACK: Type.String({ default: 'agent_trajectory_compaction', description: 'comma-separated per-key skills whose breaker is armed: the sweep rolls a key back when its scorecard trips; a name that is not a per-key skill stops the start' }),
  GW_BREAKER_SWEEP_S: Seconds(60, 'period of the breaker sweep (one replica sweeps at a time)'),
  GW_SKILL_THREADS: Type.Integer({ minimum: 1, maximum: 64, default: 2, description: 'skill pool threads per replica (most)' }),
  GW_SKILL_MIN_THREADS: Type.Integer({ minimum: 1, maximum: 64, default: 2, description: 'skill pool threads kept warm per replica' }),
  GW_SKILL_SHADOW_THREADS: Type.Integer({ minimum: 1, maximum: 64, default: 1, description: 'skill pool threads per replica for the shadow stages beside dispatch, kept warm, at the lowest CPU priority' }),
  GW_SKILL_TASKS_PER_THREAD: Type.Integer({ minimum: 1, maximum: 64, default: 4, description: 'skill stages handed to one pool thread at a time: it runs them one after another, without a wake-up between them' }),
  GW_SKILL_MAX_QUEUE: Type.Integer({ minimum: 0, maximum: 65536, default: 256, description: 'skill stages waiting for a thread before a stage is refused as overloaded; the stages requests wait for and the shadow stages beside dispatch are bounded apart, each by this' }),
  GW_SKILL_IDLE_TIMEOUT_MS: Type.Integer({ minimum: 0, maximum: 3_600_000, default: 30_000, description: 'an idle skill thread above the warm count ends after this' }),
  GW_SKILL_CEILING_ACTING_MS: Type.Integer({ minimum: 0, maximum: 60_000, default: 250, description: 'wall-clock ceiling of each acting skill stage, per request; 0 = every stage misses' }),
  GW_SKILL_CEILING_SHADOW_MS: Type.Integer({ minimum: 0, maximum: 60_000, default: 50, description: 'wall-clock ceiling of each shadow skill stage, per request; 0 = every stage misses' }),
  GW_SKILL_ABORT_GRACE_MS: Type.Integer({ minimum: 0, maximum: 60_000, default: 100, description: 'after its ceiling, a running stage gets this long to stop on its own before its thread is killed (a thread starved of CPU meanwhile is spared: docs/operations.md, Ceilings)' }),
  GW_GUARDRAILS_MODEL_MODE: Type.Union([Type.Literal('shadow'), Type.Literal('enforce'), Type.Literal('off')], { default: 'shadow' }),
  GW_IDP_ISSUER: Type.Optional(Type.String({ minLength: 1 })),
  GW_IDP_JWKS: Type.Optional(Type.String({ minLength: 1, description: 'JWKS file path or URL' })),
  GW_IDP_AUDIENCE: Type.Optional(Type.String({ minLength: 1 })),
  GW_IDP_GROUP_MAP: Type.Optional(Type.String({ minLength: 2, description: 'JSON object: IdP group to org_id' })),
  GW_DEDICATED_TENANT: Type.Optional(Type.String({ pattern: '^[a-z0-9_-]{1,64}$' })),
  GW_ALLOWED_REGIONS: Type.Optional(Type.String({ minLength: 1, description: 'comma-separated upstream regions allowed' })),
  GW_TELEMETRY_RETENTION_H: Type.Number({ exclusiveMinimum: 0, default: 168, description: 'hours request rows, decision records and usage rollups are kept in Redis' }),
  GW_TELEMETRY_BUFFER_ROWS: Type.Integer({ minimum: 1, default: 50_000, description: 'rows a replica holds while Redis is slow or away; past it rows are dropped and counted' }),
  GW_TELEMETRY_READ_TIMEOUT_S: Seconds(5, 'bound on a telemetry read (durable list, single request, usage); past it 504 store_timeout'),
  GW_TELEMETRY_SUM_DELAY_S: Seconds(60, 'a finished hour or day of usage is summed into projections this long after its end or its latest row, whichever is later'),
  GW_SHUTDOWN_GRACE_S: Seconds(10, 'in-flight requests get this long on SIGTERM'),
  GW_CACHE_SIMILARITY: Type.Number({ exclusiveMinimum: 0, maximum: 1, default: 0.95, description: 'semantic_cache: least similarity of a near-duplicate last user turn (min of word-shingle Jaccard and character-trigram cosine)' }),
  GW_CACHE_TTL_S: Type.Integer({ minimum: 1, maximum: 30 * 86400, default: 3600, description: 'semantic_cache: seconds a stored reply lives' }),
  GW_CACHE_MAX_ENTRIES: Type.Integer({ minimum: 1, default: 10_000, description: 'semantic_cache in process (no Redis): most entries kept per replica' }),
  GW_CACHE_MAX_BYTES: Type.Integer({ minimum: 65_536, default: 64 * 1024 * 1024, description: 'semantic_cache in process: most bytes kept per replica; a reply over a sixteenth of it is never stored' }),
  GW_DEV: Type.Union([Type.Literal('0'), Type.Literal('1')], { default: '0', description: 'development mode: local fake vendors for every provider and a demo org and key, printed once; one process; never in production' }),
});

export type RawSettings = Static<typeof SettingsSchema>;

/** The skills GW_SKILL_AUTO_ROLLBACK arms: its comma-separated items, trimmed (a separator alone arms none). */
export const armedSkills = (s: Pick<RawSettings, 'GW_SKILL_AUTO_ROLLBACK'>): string[] =>
  s.GW_SKILL_AUTO_ROLLBACK.split(',')
    .map((x) => x.trim())
    .filter(Boolean);
export type Settings = RawSettings & { GW_WORKERS: number };

export class SettingsError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid settings:\n  ${problems.join('\n  ')}`);
  }
}

const ajv = new Ajv({ coerceTypes: true, useDefaults: true, allErrors: true, strict: false });
const validate = ajv.compile<RawSettings>(SettingsSchema);

type SettingSchema = TSchema & { secret?: boolean; anyOf?: Array<{ const?: unknown }> };
const schemaOf = (name: string): SettingSchema | undefined => (SettingsSchema.properties as Record<string, SettingSchema>)[name];

/** The values a union of constants allows (GW_LOG_LEVEL's levels), or undefined for any other schema. */
function allowedValues(schema: SettingSchema | undefined): unknown[] | undefined {
  const members = schema?.anyOf;
  if (!members || !members.every((m) => 'const' in m)) return undefined;
  return members.map((m) => m.const);
}

/** True when a setting's value must never be printed: marked secret in the schema. */
export const isSecretSetting = (name: string): boolean => schemaOf(name)?.secret === true;

/**
 * One line per bad variable: what is wrong once (a union of constants names
 * its allowed values instead of one "must be equal to constant" per member),
 * and the value given unless the setting is secret.
 */
function schemaProblems(errors: readonly ErrorObject[], raw: Record<string, unknown>): string[] {
  const byName = new Map<string, Set<string>>();
  for (const e of errors) {
    const name = e.instancePath.replace(/^\//, '') || String(e.params['missingProperty'] ?? '');
    const allowed = allowedValues(schemaOf(name));
    const message = allowed ? `must be one of ${allowed.join(', ')}` : (e.message ?? 'invalid');
    let messages = byName.get(name);
    if (!messages) byName.set(name, (messages = new Set()));
    messages.add(message);
  }
  return [...byName].map(([name, messages]) => {
    const given = isSecretSetting(name) ? 'value not shown: it is secret' : `got ${JSON.stringify(raw[name])}`;
    return `${name}: ${[...messages].join('; ')} (${given})`;
  });
}

/** Reads GW_ variables from `env`; throws SettingsError listing every bad variable. */
export function loadSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const raw: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(env)) {
    if (k.startsWith('GW_') && v !== undefined && v !== '') raw[k] = v;
  }
  const problems: string[] = [];
  for (const k of Object.keys(raw)) {
    if (!(k in SettingsSchema.properties)) problems.push(`${k}: unknown setting`);
  }
  if (!validate(raw)) problems.push(...schemaProblems(validate.errors ?? [], raw));
  const s = raw as RawSettings;
  const redis = s.GW_REDIS_URL || s.GW_REDIS_CLUSTER;
  if (s.GW_REDIS_URL && s.GW_REDIS_CLUSTER) problems.push('GW_REDIS_CLUSTER: set either GW_REDIS_URL (one node) or GW_REDIS_CLUSTER (a cluster), not both');
  if ((redis || s.GW_DATA_DIR) && !s.GW_SECRETS_KEY) {
    problems.push('GW_SECRETS_KEY: required when GW_REDIS_URL, GW_REDIS_CLUSTER or GW_DATA_DIR is set (32 bytes, base64)');
  }
  if (s.GW_WORKERS !== undefined && s.GW_WORKERS > 1 && !redis) {
    problems.push('GW_WORKERS: more than one replica needs GW_REDIS_URL or GW_REDIS_CLUSTER (embedded state is per process)');
  }
  // a name the breakers do not know would arm nothing, silently
  const unknownArmed = armedSkills(s).filter((x) => !isPerKeySkill(x));
  if (unknownArmed.length > 0) problems.push(`GW_SKILL_AUTO_ROLLBACK: not a per-key skill: ${unknownArmed.join(', ')} (per-key skills: ${PER_KEY_SKILLS.join(', ')})`);
  if (s.GW_SKILL_MIN_THREADS > s.GW_SKILL_THREADS) problems.push('GW_SKILL_MIN_THREADS: must not exceed GW_SKILL_THREADS');
  if (s.GW_IDP_ISSUER && !s.GW_IDP_JWKS) problems.push('GW_IDP_JWKS: required when GW_IDP_ISSUER is set');
  if (s.GW_IDP_GROUP_MAP) {
    try {
      const m: unknown = JSON.parse(s.GW_IDP_GROUP_MAP);
      if (typeof m !== 'object' || m === null || Array.isArray(m)) throw new Error('not an object');
    } catch {
      problems.push('GW_IDP_GROUP_MAP: must be a JSON object of group to org_id');
    }
  }
  if (problems.length > 0) throw new SettingsError(problems);
  const workers = s.GW_WORKERS ?? (redis ? cpus().length : 1);
  return { ...s, GW_WORKERS: workers };
}
