import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Cluster, type Redis } from 'ioredis';
import { startGateway, type RunningGateway } from '../../src/main.js';
import { loadSettings } from '../../src/settings.js';
import type { SkillRow } from '../../src/skills/table.js';
import { clusterTarget, describeTarget, redisClient, type RedisClient, type RedisTarget } from '../../src/stores/redis/client.js';
import { scratchDir } from './scratch.js';

/** The one setting naming the test Redis: every Redis-backed test case uses it. */
export const REDIS_URL_VARIABLE = 'GW_TEST_REDIS_URL';
export const REDIS_URL = process.env[REDIS_URL_VARIABLE] || 'redis://127.0.0.1:6379';
/**
 * Set (seed nodes, as GW_REDIS_CLUSTER takes them), the Redis-backed cases
 * run on that Redis Cluster instead: test/integration/redis-cluster.test.ts
 * starts one and runs the store tests so.
 */
export const REDIS_CLUSTER_VARIABLE = 'GW_TEST_REDIS_CLUSTER';
const CLUSTER_SEEDS = process.env[REDIS_CLUSTER_VARIABLE] || undefined;
/** The Redis the Redis-backed cases use: REDIS_URL's one node, or the cluster. */
export const TEST_REDIS: RedisTarget = CLUSTER_SEEDS ? clusterTarget(CLUSTER_SEEDS) : REDIS_URL;
/** The gateway settings naming TEST_REDIS. */
export const TEST_REDIS_ENV: Readonly<Record<string, string>> = CLUSTER_SEEDS ? { GW_REDIS_CLUSTER: CLUSTER_SEEDS } : { GW_REDIS_URL: REDIS_URL };

/** A client of TEST_REDIS for a test's own reads and writes (a cluster client on the cluster); the caller disconnects it. */
export function testRedis(): RedisClient {
  const client = redisClient(TEST_REDIS, {});
  client.on('error', () => undefined);
  return client;
}

/** Every node's own connection: one node, or each master and replica of a cluster (CLIENT LIST, SCAN and INFO are per node). */
export const nodesOf = (client: RedisClient, role: 'master' | 'all' = 'all'): Redis[] => (client instanceof Cluster ? client.nodes(role) : [client]);

/** Every key matching `pattern`: SCAN on each master (a cluster's SCAN sees one node's keys). */
export async function keysMatching(client: RedisClient, pattern: string): Promise<string[]> {
  // a cluster client knows its masters once connected
  await client.ping();
  const keys: string[] = [];
  for (const node of nodesOf(client, 'master')) {
    let cursor = '0';
    do {
      const [next, found] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      cursor = next;
      keys.push(...found);
    } while (cursor !== '0');
  }
  return keys;
}
/** How long the one check waits for Redis to answer before the Redis cases fail. */
const REDIS_PING_TIMEOUT_MS = 2000;
export const ADMIN_KEY = 'admin-key-for-tests-0123456789';
export const CONFIG_SECRET = 'config-secret-for-tests-012345';
export const SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');

/** A reproducible developer key secret: `gw_` + 40 base62 characters. */
export function devKeySecret(seed: string): string {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  let out = '';
  const bytes = Buffer.from(seed.padEnd(40, '#'));
  for (let i = 0; i < 40; i++) out += alphabet[(bytes[i % bytes.length]! + i * 7) % 62];
  return `gw_${out}`;
}

export interface Bootstrap {
  orgs?: Array<{ org_id: string; parent_org_id?: string; plan?: string; rps_cap?: number }>;
  dev_keys?: Array<{ org_id: string; key_id?: string; dev_key_id?: string; api_key: string }>;
}

export interface TestGateway {
  url: string;
  port: number;
  gateway: RunningGateway;
  /** every JSON log line written so far (batched access lines are flushed first) */
  readonly logs: string[];
  /** GW_REDIS_PREFIX used (when redis: true) */
  redisPrefix: string | undefined;
  close(): Promise<void>;
}

export interface TestGatewayOptions {
  env?: Record<string, string>;
  bootstrap?: Bootstrap;
  /** use the real Redis under a unique namespace */
  redis?: boolean;
  /** reuse a namespace (a second replica of the same deployment) */
  redisPrefix?: string;
  /** the skills table the gateway runs (rows of test evaluators); the shipped one by default */
  skillRows?: readonly SkillRow[];
}

let redisAnswered: Promise<void> | undefined;

/**
 * Resolves once the test Redis has answered a PING (checked once per test
 * file, before its first Redis case). When it does not answer, the file stops
 * at once, naming the address and the setting: its Redis cases would each wait
 * on reconnects, and the vendor fakes they started would keep it running.
 */
export function requireRedis(): Promise<void> {
  redisAnswered ??= (async () => {
    const probe = redisClient(TEST_REDIS, { connectTimeout: REDIS_PING_TIMEOUT_MS, retryStrategy: () => null, maxRetriesPerRequest: 0, enableOfflineQueue: false });
    let cause = 'no answer';
    probe.on('error', (err: Error) => (cause = err.message));
    try {
      await probe.connect();
      await probe.ping();
    } catch (err) {
      const variable = CLUSTER_SEEDS ? REDIS_CLUSTER_VARIABLE : REDIS_URL_VARIABLE;
      process.stderr.write(`Redis at ${describeTarget(TEST_REDIS)} did not answer (${cause}; ${err instanceof Error ? err.message : String(err)}): start it or set ${variable} to one that answers\n`);
      process.exit(1);
    } finally {
      probe.disconnect();
    }
  })();
  return redisAnswered;
}

/** A unique Redis namespace for one test deployment. */
export const newRedisPrefix = (): string => `gwtest:${randomBytes(6).toString('hex')}:`;

/** Runs `each` on every batch of keys matching `pattern` in the test Redis. */
async function scanRedis(pattern: string, each: (r: RedisClient, keys: string[]) => Promise<unknown>): Promise<void> {
  await requireRedis();
  const r = testRedis();
  try {
    const keys = await keysMatching(r, pattern);
    if (keys.length > 0) await each(r, keys);
  } finally {
    r.disconnect();
  }
}

/** Deletes every key of a test namespace: one DEL per key, since a cluster refuses one command on keys of several slots. */
export const dropRedisPrefix = (prefix: string): Promise<void> => scanRedis(`${prefix}*`, (r, keys) => Promise.all(keys.map((key) => r.del(key))));

/** Every string value under keys matching `pattern` (a test reads what a store kept). */
export async function redisValues(pattern: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  await scanRedis(pattern, async (r, keys) => {
    for (const k of keys) if ((await r.type(k)) === 'string') out.set(k, (await r.get(k)) ?? '');
  });
  return out;
}

/** A GW_BOOTSTRAP file holding `bootstrap`, in a fresh temporary directory. */
export async function bootstrapFile(bootstrap: Bootstrap): Promise<string> {
  const file = join(scratchDir('gw-boot-'), 'bootstrap.json');
  await writeFile(file, JSON.stringify(bootstrap));
  return file;
}

/** Starts the real gateway in this process on a loopback port. */
export async function startTestGateway(opts: TestGatewayOptions = {}): Promise<TestGateway> {
  const env: Record<string, string> = {
    GW_HOST: '127.0.0.1',
    GW_PORT: '0',
    GW_LOG_LEVEL: 'info',
    GW_ADMIN_KEY: ADMIN_KEY,
    GW_CONFIG_SECRET: CONFIG_SECRET,
    GW_SHUTDOWN_GRACE_S: '1',
    ...opts.env,
  };
  let redisPrefix: string | undefined;
  if (opts.redis || opts.redisPrefix) {
    await requireRedis();
    redisPrefix = opts.redisPrefix ?? newRedisPrefix();
    // a test naming its own Redis (one behind a proxy) keeps it
    if (!env['GW_REDIS_URL'] && !env['GW_REDIS_CLUSTER']) Object.assign(env, TEST_REDIS_ENV);
    env['GW_REDIS_PREFIX'] = redisPrefix;
    env['GW_SECRETS_KEY'] ??= SECRETS_KEY;
    env['GW_WORKERS'] ??= '1';
  }
  if (opts.bootstrap) env['GW_BOOTSTRAP'] = await bootstrapFile(opts.bootstrap);
  const logs: string[] = [];
  let partial = '';
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      const text = partial + chunk.toString('utf8');
      const lines = text.split('\n');
      partial = lines.pop() ?? '';
      logs.push(...lines.filter(Boolean));
      cb();
    },
  });
  const gateway = await startGateway(loadSettings(env), { logDestination: destination, ...(opts.skillRows && { skillRows: opts.skillRows }) });
  return {
    url: `http://127.0.0.1:${gateway.port}`,
    port: gateway.port,
    gateway,
    get logs() {
      gateway.flushLogs();
      return logs;
    },
    redisPrefix,
    async close() {
      await gateway.close();
      if (redisPrefix && !opts.redisPrefix) await dropRedisPrefix(redisPrefix);
    },
  };
}

/** A per-org cap no functional test reaches: the default (50/s, half a second of burst) trips tests that fire calls back to back. */
export const UNLIMITED_RPS = 100_000;

/** Several orgs, one developer key each (its secret seeded by the org id): keys by org id. */
export function tenants(...orgIds: string[]): { bootstrap: Bootstrap; keys: Record<string, string> } {
  const keys = Object.fromEntries(orgIds.map((id) => [id, devKeySecret(id)]));
  return {
    keys,
    bootstrap: {
      orgs: orgIds.map((org_id) => ({ org_id, rps_cap: UNLIMITED_RPS })),
      dev_keys: orgIds.map((org_id) => ({ org_id, dev_key_id: `dk-${org_id}`, api_key: keys[org_id] as string })),
    },
  };
}

/** One org with one developer key: the common fixture. Its rate limit is out of the way; rate-limit tests set their own. */
export function oneTenant(orgId = 'acme', seed = orgId): { bootstrap: Bootstrap; devKey: string } {
  const devKey = devKeySecret(seed);
  return { devKey, bootstrap: { orgs: [{ org_id: orgId, rps_cap: UNLIMITED_RPS }], dev_keys: [{ org_id: orgId, dev_key_id: `dk-${orgId}`, api_key: devKey }] } };
}
