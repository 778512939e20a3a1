/**
 * The relay on one Redis and on a Redis Cluster, in one run: the bench's
 * small JSON and 20-chunk stream through the gateway with GW_REDIS_URL (the
 * Redis at GW_TEST_REDIS_URL or 127.0.0.1:6379, under a fresh prefix), then
 * with GW_REDIS_CLUSTER on a 3-master, 3-replica cluster this script starts
 * on loopback ports (and stops). Prints each mode's rows of the bench table.
 *
 *   node --import tsx bench/redis-modes.ts
 */
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { startRedisCluster } from '../test/helpers/redis-cluster.js';

const secretsKey = randomBytes(32).toString('base64');
const prefix = `benchmodes:${randomBytes(4).toString('hex')}:`;
const single = process.env['GW_TEST_REDIS_URL'] || 'redis://127.0.0.1:6379';

const cluster = await startRedisCluster();
try {
  const modes: Array<[string, string]> = [
    ['one Redis', `GW_REDIS_URL=${single} GW_REDIS_PREFIX=${prefix} GW_SECRETS_KEY=${secretsKey}`],
    ['Redis Cluster (3+3)', `GW_REDIS_CLUSTER=${cluster.seeds} GW_REDIS_PREFIX=${prefix} GW_SECRETS_KEY=${secretsKey}`],
  ];
  for (const [name, env] of modes) {
    const out = execFileSync(process.execPath, ['--import', 'tsx', new URL('./run.ts', import.meta.url).pathname], {
      env: { ...process.env, BENCH_ONLY: process.env['BENCH_ONLY'] ?? 'json,stream,gateway', BENCH_GATEWAY_ENV: env },
      encoding: 'utf8',
      maxBuffer: 16 * 1024 * 1024,
    });
    process.stdout.write(`\n${name}\n${out.split('\n').filter((l) => /^\| (small JSON|20-chunk SSE stream) \| gateway/.test(l)).join('\n')}\n`);
  }
} finally {
  await cluster.stop();
}
