import { Cluster, Redis, type ChainableCommander, type RedisOptions } from 'ioredis';

/**
 * Where the gateway's Redis is: one node (a `redis://` or `rediss://` URL,
 * GW_REDIS_URL) or a Redis Cluster (seed nodes, GW_REDIS_CLUSTER). Every
 * store opens its connections through `redisClient`, so a store neither knows
 * nor cares which; what differs on a cluster (a command's keys must share a
 * hash slot, a command without keys goes to any node) is handled by the key
 * layout (prefixes.ts, telemetry/keys.ts) and the few helpers here.
 */
export type RedisTarget = string | ClusterTarget;

export interface ClusterTarget {
  /** nodes to learn the cluster from: any of its nodes will do, the client finds the rest */
  seeds: ReadonlyArray<{ host: string; port: number }>;
  username?: string;
  password?: string;
  tls: boolean;
}

/** The connection settings the stores choose; on a cluster they apply to every node's connection. */
export type ClientOptions = Pick<
  RedisOptions,
  'connectionName' | 'commandTimeout' | 'connectTimeout' | 'maxRetriesPerRequest' | 'enableOfflineQueue' | 'retryStrategy'
>;

export type RedisClient = Redis | Cluster;

/**
 * GW_REDIS_CLUSTER (validated by its pattern in src/settings.ts): seed nodes
 * `host:port,host:port,…`, optionally preceded by `redis://` or `rediss://`
 * (TLS) with the credentials every node shares:
 * `rediss://user:password@host:port,host:port`.
 */
export function clusterTarget(spec: string): ClusterTarget {
  const m = /^(?:(rediss?):\/\/(?:([^@/]*)@)?)?(.*)$/.exec(spec.trim());
  const [, scheme, credentials, nodes = ''] = m ?? [];
  const seeds = nodes.split(',').map((hostPort) => {
    const at = hostPort.lastIndexOf(':');
    return { host: hostPort.slice(0, at), port: Number(hostPort.slice(at + 1)) };
  });
  const target: ClusterTarget = { seeds, tls: scheme === 'rediss' };
  if (credentials !== undefined) {
    const colon = credentials.indexOf(':');
    const user = decodeURIComponent(colon < 0 ? credentials : credentials.slice(0, colon));
    if (user) target.username = user;
    if (colon >= 0) target.password = decodeURIComponent(credentials.slice(colon + 1));
  }
  return target;
}

/** The Redis a deployment's settings name, or undefined without Redis (embedded stores). */
export function redisTargetOf(settings: { GW_REDIS_URL?: string; GW_REDIS_CLUSTER?: string }): RedisTarget | undefined {
  if (settings.GW_REDIS_CLUSTER) return clusterTarget(settings.GW_REDIS_CLUSTER);
  return settings.GW_REDIS_URL;
}

export const isCluster = (target: RedisTarget): target is ClusterTarget => typeof target !== 'string';

/** The setting that named the target, for messages that tell the operator what to fix. */
export const settingOf = (target: RedisTarget): string => (isCluster(target) ? 'GW_REDIS_CLUSTER' : 'GW_REDIS_URL');

/** The target as a message may show it: never a password. */
export function describeTarget(target: RedisTarget): string {
  if (isCluster(target)) return `the cluster of ${target.seeds.map((s) => `${s.host}:${s.port}`).join(',')}`;
  try {
    const u = new URL(target);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'the configured URL';
  }
}

/** A client of the target, not yet connected (`connect()` is the caller's, so start-up can report a Redis that is away). */
export function redisClient(target: RedisTarget, options: ClientOptions): RedisClient {
  if (!isCluster(target)) return new Redis(target, { ...options, lazyConnect: true });
  const { enableOfflineQueue, retryStrategy, ...perNode } = options;
  return new Cluster(
    target.seeds.map((s) => ({ ...s })),
    {
      lazyConnect: true,
      ...(enableOfflineQueue !== undefined && { enableOfflineQueue }),
      ...(retryStrategy !== undefined && { clusterRetryStrategy: retryStrategy }),
      redisOptions: { ...perNode, ...nodeCredentials(target) },
    },
  );
}

/** What every connection to a node of the cluster carries: credentials and TLS. */
export function nodeCredentials(target: ClusterTarget): Pick<RedisOptions, 'username' | 'password' | 'tls'> {
  return { ...(target.username && { username: target.username }), ...(target.password && { password: target.password }), ...(target.tls && { tls: {} }) };
}

/**
 * Redis TIME of the node serving `key`'s slot. On a cluster a bare TIME goes
 * to any node; sent in a pipeline beside a command on `key` it goes where
 * that command goes.
 */
export async function timeAt(client: RedisClient, key: string): Promise<[string | number, string | number]> {
  const replies = await client.pipeline().exists(key).time().exec();
  const [err, time] = replies?.[1] ?? [new Error('no reply to TIME')];
  if (err) throw err;
  return time as [string | number, string | number];
}

/** CRC16/XMODEM, the checksum Redis Cluster hashes keys with. */
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** The hash slot of a key as Redis Cluster computes it: of its hash tag (the first non-empty `{…}`) when it has one, else of the whole name. */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  return crc16(Buffer.from(close > open + 1 ? key.slice(open + 1, close) : key)) % 16384;
}

/** The master serving `key` as the client last learned it (`host:port`; '' on one node, or before the client knows). */
const masterOf = (client: RedisClient, key: string): string => (client instanceof Cluster ? (client.slots[keySlot(key)]?.[0] ?? '') : '');

/** Whether the cluster lists a replica for `key`'s master (never on one node: see replicaHolds). */
const hasReplica = (client: RedisClient, key: string): boolean => client instanceof Cluster && (client.slots[keySlot(key)]?.length ?? 0) > 1;

/**
 * Waits until a replica holds everything this client wrote to the master of
 * `key`. Redis replicates asynchronously: a master that fails right after
 * answering a write can take it with it, and the replica promoted in its
 * place never had it. On a cluster this is `WAIT 1 <timeoutMs>` on the
 * client's own connection to that master (WAIT counts what that connection
 * wrote). True once a replica has it, or when there is nothing to wait for:
 * a master without a replica, or one node (how it is replicated is the
 * operator's setup, and a node without replicas would hold every WAIT for
 * the whole timeout).
 */
export async function replicaHolds(client: RedisClient, key: string, timeoutMs: number): Promise<boolean> {
  if (!(client instanceof Cluster) || !hasReplica(client, key)) return true;
  const master = client.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === masterOf(client, key));
  if (!master) return false;
  return (await master.wait(1, timeoutMs).catch(() => 0)) >= 1;
}

/** One pipeline's worth of commands: all on keys of one master. */
export interface NodeBatch<T> {
  items: T[];
  /** WAIT 1 goes last in this batch's pipeline: its master has a replica (see replicaHolds) */
  awaitReplica: boolean;
}

/**
 * Splits commands into pipelines: one on one node; on a cluster one per
 * master, since a pipeline may not span nodes (`keyOf` gives each command's
 * first key; a command's own keys must share a slot).
 */
export function perNode<T>(client: RedisClient, items: readonly T[], keyOf: (item: T) => string): NodeBatch<T>[] {
  const groups = new Map<string, NodeBatch<T>>();
  for (const item of items) {
    const key = keyOf(item);
    const master = masterOf(client, key);
    const group = groups.get(master);
    if (group) group.items.push(item);
    else groups.set(master, { items: [item], awaitReplica: hasReplica(client, key) });
  }
  return [...groups.values()];
}

/** What one master answered: each command's reply in order, and the failure that makes its batch one to send again. */
export interface NodeReplies {
  replies: Array<[Error | null, unknown]>;
  /** the pipeline failed, a command failed, or (with `replicaWaitMs`) no replica confirmed in time */
  failure?: unknown;
}

/**
 * Sends `items` in one pipeline per master (perNode), each command queued by
 * `queue`. With `replicaWaitMs`, a batch whose master has a replica ends with
 * WAIT 1 and counts as failed when no replica confirms it in time. On a
 * cluster a failed batch makes the client ask the cluster who serves which
 * slot again: a pipeline sent to a master that died fails with "Connection is
 * closed", which, unlike a single command's failure, does not make ioredis
 * look for the replica promoted in its place, and the batch sent again would
 * go to the dead master for ever.
 */
export async function pipelinePerNode<T>(
  client: RedisClient,
  items: readonly T[],
  keyOf: (item: T) => string,
  queue: (pipeline: ChainableCommander, item: T) => void,
  replicaWaitMs?: number,
): Promise<NodeReplies[]> {
  const answers = await Promise.all(
    perNode(client, items, keyOf).map(async (batch) => {
      const pipeline = client.pipeline();
      for (const item of batch.items) queue(pipeline, item);
      const awaitReplica = replicaWaitMs !== undefined && batch.awaitReplica;
      if (awaitReplica) pipeline.wait(1, replicaWaitMs);
      let replies: Array<[Error | null, unknown]>;
      try {
        replies = (await pipeline.exec()) ?? [];
      } catch (failure) {
        return { replies: [], failure };
      }
      const [waitErr, acks] = awaitReplica ? (replies.pop() ?? [new Error('no reply to WAIT')]) : [null, 1];
      const failure = replies.find(([err]) => err)?.[0] ?? waitErr ?? (Number(acks) < 1 ? new Error('no replica confirmed the batch in time') : undefined);
      return failure === undefined ? { replies } : { replies, failure };
    }),
  );
  if (client instanceof Cluster && answers.some((a) => a.failure !== undefined)) client.refreshSlotsCache();
  return answers;
}
