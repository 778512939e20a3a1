import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { runTestsOnCluster, startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.js';

/**
 * The store tests, run again on a real Redis Cluster (3 masters, 3
 * replicas): the configuration documents and their change messages, the
 * spend-cap and rate-limit scripts, the semantic cache, the telemetry
 * streams and rollups, and the lifecycle store (feedback, transitions, the
 * sweep's lease). A key layout that put one script's keys in two slots, a
 * pipeline spanning nodes or a SCAN of one node would fail them there.
 * `node --import tsx scripts/test-on-cluster.ts` runs every Redis-backed
 * test file so.
 */
const STORE_TESTS = [
  'test/unit/doc-store.test.ts',
  'test/unit/cache-stores.test.ts',
  'test/integration/spend-cap.test.ts',
  'test/integration/telemetry-replicas.test.ts',
  'test/integration/usage-projections.test.ts',
  'test/integration/scorecard.test.ts',
];

describe('the store tests on a Redis Cluster', () => {
  let cluster: TestRedisCluster;
  before(async () => (cluster = await startRedisCluster()));
  after(() => cluster.stop());

  it(`${STORE_TESTS.length} store test files pass with GW_TEST_REDIS_CLUSTER`, async () => {
    const { code, output } = await runTestsOnCluster(cluster.seeds, STORE_TESTS);
    const summary = output.split('\n').filter((l) => /^# (tests|pass|fail) /.test(l)).map((l) => l.slice(2));
    process.stdout.write(`on the cluster: ${summary.join(', ')}\n`);
    assert.equal(code, 0, output.split('\n').filter((l) => /not ok|error:|Error/.test(l)).slice(0, 40).join('\n'));
    // the child ran the files (a child that ran nothing also exits 0)
    assert.match(summary.join(' '), /pass [1-9]/);
  });
});
