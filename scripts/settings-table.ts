/**
 * Prints the README's configuration table from the settings schema
 * (src/settings.ts), so the table cannot drift from the code:
 *
 *   node --import tsx scripts/settings-table.ts           prints it
 *   node --import tsx scripts/settings-table.ts --write   rewrites the block in README.md
 *
 * test/unit/readme-settings.test.ts fails when README.md's block differs.
 */
import { fileURLToPath } from 'node:url';
import type { TSchema } from '@sinclair/typebox';
import { SettingsSchema } from '../src/settings.js';
import { row, writeBlock } from './doc-blocks.js';

export const README = fileURLToPath(new URL('../README.md', import.meta.url));
export const BLOCK = 'settings';

/**
 * What each setting means, where the schema's own description says too little.
 * The schema description, when present, comes first.
 */
export const MEANING: Readonly<Record<string, string>> = {
  GW_HOST: 'listen address',
  GW_PORT: 'listen port; `0` picks a free one (shared by every replica)',
  GW_WORKERS: 'more than 1 needs `GW_REDIS_URL` or `GW_REDIS_CLUSTER`',
  GW_REDIS_URL: 'Redis for shared configuration, spend-cap metering and rate limits; unset = embedded in-process stores',
  GW_REDIS_CLUSTER: 'the same state on a Redis Cluster, in place of `GW_REDIS_URL` (set one, not both); any of its nodes will do as seeds (docs/operations.md, Redis Cluster)',
  GW_REDIS_PREFIX: 'lets several deployments (or test runs) share one Redis',
  GW_DATA_DIR: 'embedded mode: directory where configuration state is persisted (`state.json`); unset = memory only',
  GW_ADMIN_KEY: 'admin credential (at least 16 characters); unset = admin routes answer 403 `invalid_admin_key`',
  GW_CONFIG_SECRET: 'deployment config secret (at least 16 characters), entitled on the skill routes when it names the tenant',
  GW_SECRETS_KEY: 'AES-256-GCM key sealing stored provider keys; required with `GW_REDIS_URL`, `GW_REDIS_CLUSTER` or `GW_DATA_DIR`; generate: `openssl rand -base64 32`',
  GW_SECRETS_KEY_PREVIOUS: 'see docs/api.md, Stored provider keys',
  GW_BOOTSTRAP: 'path of a JSON file of orgs and developer keys applied at start (idempotent)',
  GW_UPSTREAM_OPENAI: '`http(s)://host[:port]`; path and query stay the vendor\'s',
  GW_UPSTREAM_CLOUDX: 'also lifts the `*.openai.azure.com` / `*.cognitiveservices.azure.com` endpoint allowlist',
  GW_UPSTREAM_MSGVENDOR: '`http(s)://host[:port]`',
  GW_UPSTREAM_GENVENDOR: '`http(s)://host[:port]`',
  GW_UPSTREAM_GENVENDOR_VERTEX: 'serves Gemini and Claude-on-Vertex paths',
  GW_UPSTREAM_CLOUDY: 'SigV4 still signs for the region asked for',
  GW_UPSTREAM_CONNECTIONS: 'undici pool size per origin',
  GW_UPSTREAM_MAX_INFLIGHT: 'a dispatch-side shed: no `x-gw-error` (docs/operations.md, Overload)',
  GW_MAX_REPLY_BYTES: 'streams are not capped: backpressure bounds them',
  GW_LOG_LEVEL: 'pino level',
  GW_METRICS_PORT: 'also serve `GET /metrics` on this port; with several replicas the primary serves it, aggregating every replica',
  GW_METRICS_PUBLIC: '`0` removes `GET /metrics` from the main port',
  GW_ALLOW_UWS_FALLBACK: '`1` lets the gateway start on the slow pure-JS server when the uWebSockets.js native binary does not load (otherwise start-up stops)',
  GW_MAX_BODY_BYTES: 'largest request body accepted; larger is 413 `payload_too_large`',
  GW_DEFAULT_RPS_CAP: 'requests per second of an org created without `rps_cap`',
  GW_REQUEST_DEADLINE_S: '504 `gateway_timeout` past it; also the upstream headers timeout',
  GW_STREAM_IDLE_S: 'seconds',
  GW_STREAM_DEADLINE_S: 'seconds',
  GW_QUEUE_WAIT_MAX_S: 'a request that waited longer since the transport accepted it is 503 `overloaded` at engine entry',
  GW_BYOK_STORE_TIMEOUT_S: 'past it: 504 `store_timeout`, `Retry-After: 5`',
  GW_LOOP_STALL_SHED_SHARE: 'share of `GW_LOOP_STALL_WINDOW_S` the event loop may be stalled before heavy bodies are shed (503 `overloaded`; light ones are still served)',
  GW_LOOP_STALL_WINDOW_S: 'also the window of `shedding` on `/healthz` and of the drain rate behind `Retry-After`',
  GW_INGRESS_BUDGET: 'declared body bytes; a request that would pass it is 503 `overloaded` before its body is read; unset = off; shown on `/healthz`',
  GW_HEAVY_BODY_BYTES: 'light bodies are served while the loop is stalled',
  GW_SKILL_AUTO_ROLLBACK: 'shown on `/healthz`',
  GW_GUARDRAILS_MODEL_MODE: 'guardrail classifier: `shadow` scores every prompt and only records it, `enforce` refuses with `learned_injection`, `off` does not run; shown on `/healthz`',
  GW_SKILL_THREADS: 'each replica process has its own pool',
  GW_SKILL_SHADOW_THREADS: "a request's stages never wait behind shadow work for a thread",
  GW_IDP_ISSUER: 'identity-provider mode: expected `iss` of bearer JWTs (docs/api.md, Identity-provider mode)',
  GW_IDP_JWKS: 'required with `GW_IDP_ISSUER`',
  GW_IDP_AUDIENCE: 'expected `aud` of IdP tokens',
  GW_IDP_GROUP_MAP: 'e.g. `{"platform":"acme"}`; a group may map to an array of org ids',
  GW_DEDICATED_TENANT: 'serve only this org and its sub-tenants; others get 403 `forbidden` on every authenticated route',
  GW_ALLOWED_REGIONS: '`*` suffix for a prefix (`eu-*`); an upstream naming no region counts as `global`; outside: 451 `forbidden` (docs/operations.md, Policy refusals)',
  GW_SHUTDOWN_GRACE_S: 'seconds',
};

/**
 * Settings the schema validates but no code acts on yet (beyond showing them on
 * /healthz). test/unit/readme-settings.test.ts fails once code reads one of
 * them, so this list, and the README, follow.
 */
export const NOT_YET_ENFORCED: readonly string[] = [];

type Schema = TSchema & Record<string, unknown>;

/** The values a setting accepts, read from its schema. */
function accepts(s: Schema): string {
  if (Array.isArray(s['anyOf'])) return (s['anyOf'] as Schema[]).map((v) => `\`${String(v['const'])}\``).join(', ');
  const min = s['minimum'] ?? s['exclusiveMinimum'];
  const range = (lo: unknown, hi: unknown) => [lo === undefined ? '' : `${s['exclusiveMinimum'] !== undefined ? '>' : '≥'} ${String(lo)}`, hi === undefined ? '' : `≤ ${String(hi)}`].filter(Boolean).join(', ');
  if (s['type'] === 'integer') return `integer ${range(min, s['maximum'])}`.trim();
  if (s['type'] === 'number') return `number ${range(min, s['maximum'])}`.trim();
  if (typeof s['pattern'] === 'string') return `\`${s['pattern']}\``;
  return 'string';
}

function defaultOf(name: string, s: Schema): string {
  if (name === 'GW_WORKERS') return 'CPUs with Redis, else 1';
  if (s['default'] === undefined) return 'unset';
  return `\`${String(s['default'])}\``;
}

/** The markdown table of every GW_ setting: variable, default, accepted values, meaning. */
export function settingsTable(): string {
  const lines = [row(['Variable', 'Default', 'Accepts', 'Meaning']), row(['---', '---', '---', '---'])];
  for (const [name, schema] of Object.entries(SettingsSchema.properties)) {
    const s = schema as Schema;
    const parts = [s['description'], MEANING[name]].filter((p): p is string => typeof p === 'string' && p !== '' && p !== 'seconds');
    if (NOT_YET_ENFORCED.includes(name)) parts.push('**validated, not yet acted on**');
    lines.push(row([`\`${name}\``, defaultOf(name, s), accepts(s), parts.join('; ') || 'seconds']));
  }
  return lines.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv.includes('--write')) writeBlock(README, BLOCK, settingsTable());
  else process.stdout.write(`${settingsTable()}\n`);
}
