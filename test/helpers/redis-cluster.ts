import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { eventually, freePort } from './wait.js';

const run = promisify(execFile);

/** Masters and replicas of the test cluster: the smallest cluster that survives losing a master. */
const MASTERS = 3;
const NODES = MASTERS * 2;
/**
 * How long a master may be silent before its replica takes over. Redis's
 * default is 15 s; a test fails a master on purpose and need not wait that long.
 */
export const NODE_TIMEOUT_MS = 1000;
/** Starting, joining and settling six servers on a loaded machine. */
const FORM_TIMEOUT_MS = 60_000;

export interface ClusterNode {
  host: string;
  port: number;
  /** this helper's own redis-server process */
  pid: number;
}

export interface TestRedisCluster {
  nodes: readonly ClusterNode[];
  /** the seed list as GW_REDIS_CLUSTER takes it: every node, `host:port,…` */
  seeds: string;
  /** the node serving `key`'s slot as master now */
  masterOf(key: string): Promise<ClusterNode>;
  /** SIGKILL one of this cluster's servers: it and everything it held are gone */
  kill(node: ClusterNode): Promise<void>;
  /** resolves once `node` is no longer a master and another node serves `key`'s slot with cluster_state:ok everywhere alive */
  promoted(key: string, from: ClusterNode, timeoutMs?: number): Promise<ClusterNode>;
  /** kills this helper's servers (only its own PIDs) and removes their directory */
  stop(): Promise<void>;
}

/** `n` distinct loopback ports nothing listens on now. */
async function freePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

const client = (port: number) => {
  const r = new Redis({ host: '127.0.0.1', port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, enableOfflineQueue: false });
  r.on('error', () => undefined);
  return r;
};

/** `INFO cluster`'s `cluster_state` and the node's view of the masters, asked of one node. */
async function ask<T>(port: number, question: (r: Redis) => Promise<T>): Promise<T | undefined> {
  const r = client(port);
  try {
    await r.connect();
    return await question(r);
  } catch {
    return undefined;
  } finally {
    r.disconnect();
  }
}

const clusterOk = (port: number) => ask(port, async (r) => /cluster_state:ok/.test(await r.cluster('INFO')));

/**
 * Three masters and three replicas of `redis-server --cluster-enabled yes` on
 * free loopback ports, each with its own directory, without persistence,
 * joined with `redis-cli --cluster create … --cluster-replicas 1`. Resolves
 * once every node reports cluster_state:ok and every replica is in sync.
 */
export async function startRedisCluster(): Promise<TestRedisCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'gw-cluster-'));
  // each node's cluster bus gets a port of its own (not port + 10000, which may be taken or out of range)
  const all = await freePorts(NODES * 2);
  const [ports, busPorts] = [all.slice(0, NODES), all.slice(NODES)];
  const procs = new Map<number, ChildProcess>();
  const stop = async () => {
    await Promise.all(
      [...procs.values()].map(async (p) => {
        if (p.exitCode !== null || p.signalCode !== null) return;
        const exited = once(p, 'exit');
        p.kill('SIGKILL');
        await exited;
      }),
    );
    procs.clear();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    for (const [i, port] of ports.entries()) {
      const args = [
        '--port', String(port),
        '--cluster-port', String(busPorts[i]),
        '--bind', '127.0.0.1',
        '--cluster-enabled', 'yes',
        '--cluster-config-file', join(dir, `nodes-${port}.conf`),
        '--cluster-node-timeout', String(NODE_TIMEOUT_MS),
        '--dir', dir,
        '--save', '',
        '--appendonly', 'no',
        '--logfile', join(dir, `${port}.log`),
      ];
      procs.set(port, spawn('redis-server', args, { stdio: 'ignore' }));
    }
    for (const port of ports) await eventually(async () => (await ask(port, (r) => r.ping())) === 'PONG', `redis-server on ${port}`, FORM_TIMEOUT_MS);
    await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'], { timeout: FORM_TIMEOUT_MS });
    await eventually(async () => (await Promise.all(ports.map(clusterOk))).every(Boolean), 'cluster_state:ok on every node', FORM_TIMEOUT_MS);
    await eventually(
      async () => (await Promise.all(ports.map((p) => ask(p, (r) => r.info('replication'))))).every((info) => info !== undefined && (/role:master/.test(info) || /master_link_status:up/.test(info))),
      'every replica in sync with its master',
      FORM_TIMEOUT_MS,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  const nodes: ClusterNode[] = ports.map((port) => ({ host: '127.0.0.1', port, pid: procs.get(port)?.pid as number }));
  const alive = () => nodes.filter((n) => procs.get(n.port)?.exitCode === null && procs.get(n.port)?.signalCode === null);
  const byPort = (port: number) => nodes.find((n) => n.port === port);

  /** the master of `key`'s slot as one live node's CLUSTER SLOTS tells it */
  const masterPort = async (key: string, askOf: ClusterNode): Promise<number | undefined> =>
    ask(askOf.port, async (r) => {
      const slot = Number(await r.cluster('KEYSLOT', key));
      const ranges = await r.cluster('SLOTS');
      return ranges.find(([from, to]) => slot >= from && slot <= to)?.[2]?.[1];
    });

  return {
    nodes,
    seeds: nodes.map((n) => `${n.host}:${n.port}`).join(','),
    async masterOf(key) {
      for (const n of alive()) {
        const port = await masterPort(key, n);
        const node = port === undefined ? undefined : byPort(port);
        if (node) return node;
      }
      throw new Error(`no live node knows the master of ${key}`);
    },
    async kill(node) {
      const p = procs.get(node.port);
      if (!p || p.exitCode !== null || p.signalCode !== null) return;
      const exited = once(p, 'exit');
      p.kill('SIGKILL');
      await exited;
    },
    async promoted(key, from, timeoutMs = FORM_TIMEOUT_MS) {
      let now: ClusterNode | undefined;
      await eventually(
        async () => {
          const live = alive();
          const views = await Promise.all(live.map((n) => masterPort(key, n)));
          const port = views[0];
          if (port === undefined || port === from.port || views.some((v) => v !== port)) return false;
          if (!(await Promise.all(live.map((n) => clusterOk(n.port)))).every(Boolean)) return false;
          now = byPort(port);
          return now !== undefined;
        },
        `a replica promoted in place of ${from.host}:${from.port}`,
        timeoutMs,
      );
      return now as ClusterNode;
    },
    stop,
  };
}

/**
 * Runs test files in a child `node --test` whose Redis-backed cases use the
 * cluster (GW_TEST_REDIS_CLUSTER, test/helpers/gateway.ts). Resolves to the
 * child's exit code and, unless its output is passed through, that output.
 */
export async function runTestsOnCluster(seeds: string, files: readonly string[], passThrough = false): Promise<{ code: number; output: string }> {
  // a run of its own: NODE_TEST_CONTEXT (set when this runs under node --test) would make it report to this one instead
  const { NODE_TEST_CONTEXT: _parent, ...env } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', ...files], {
    env: { ...env, GW_TEST_REDIS_CLUSTER: seeds },
    stdio: passThrough ? 'inherit' : ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  return { code: code ?? (signal ? 1 : 0), output };
}
