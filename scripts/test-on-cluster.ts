/**
 * Runs Redis-backed test files on a Redis Cluster of their own: starts three
 * masters and three replicas (test/helpers/redis-cluster.ts), runs the files
 * with GW_TEST_REDIS_CLUSTER pointing at them, and stops the cluster.
 *
 *   node --import tsx scripts/test-on-cluster.ts                  every test file that uses the test Redis
 *   node --import tsx scripts/test-on-cluster.ts test/unit/x.ts   the files named
 *
 * Needs redis-server and redis-cli (Debian: redis-server, redis-tools).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runTestsOnCluster, startRedisCluster } from '../test/helpers/redis-cluster.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** what marks a test file that uses the test Redis (test/helpers/gateway.ts) */
const USES_TEST_REDIS = /[{,\s]redis(: [^,}]+)?[,}]|redisPrefix|TEST_REDIS|testRedis|startReplicaPair|feedRows/;

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'helpers' || e.name === 'fakes' ? [] : testFiles(path);
    return e.name.endsWith('.test.ts') ? [relative(ROOT, path)] : [];
  });
}

const named = process.argv.slice(2);
// the cluster test files start clusters of their own
const files = named.length > 0 ? named : testFiles(join(ROOT, 'test')).filter((f) => !/redis-(cluster|failover)/.test(f) && USES_TEST_REDIS.test(readFileSync(join(ROOT, f), 'utf8'))).sort();
process.stdout.write(`starting a Redis Cluster for ${files.length} test files\n`);
const cluster = await startRedisCluster();
try {
  process.stdout.write(`cluster ${cluster.seeds}\n`);
  const { code } = await runTestsOnCluster(cluster.seeds, files, true);
  process.exitCode = code;
} finally {
  await cluster.stop();
}
