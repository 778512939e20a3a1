import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SkillPool } from '../../src/skills/pool.js';
import { sharedTask } from '../helpers/stage-input.js';
import type { PerKeyRow } from '../../src/skills/table.js';
import { SemanticCache } from '../../src/skills/cache/lookup.js';
import { EmbeddedCacheStore } from '../../src/stores/embedded/cache-store.js';
import { SAME_REQUEST, TRIP } from '../fixtures/cache/texts.js';

/** The semantic_cache row as the skills table carries it (same module URL form: tsx maps .js to .ts). */
const ROW: PerKeyRow = {
  id: 'semantic_cache',
  kind: 'per-key',
  evaluator: { module: new URL('../../src/skills/cache/index.js', import.meta.url).href, export: 'evaluateSemanticCache' },
  shadowBesideDispatch: true,
  order: 30,
};
const LONG_MS = 60_000;

const task = (body: unknown, acting = true) => sharedTask('semantic_cache', 'messages', body, acting);

const messages = (text: string) => ({ model: 'm', max_tokens: 200, system: 'You plan trips.', messages: [{ role: 'user', content: [{ type: 'text', text }] }] });

test('semantic_cache through a real pool thread: the keys cross back intact and drive the main-thread lookup', async (t) => {
  const pool = new SkillPool({ threads: 1, minThreads: 1, shadowThreads: 1, tasksPerThread: 1, maxQueue: 1, idleTimeoutMs: LONG_MS, abortGraceMs: 100 }, [ROW]);
  t.after(() => pool.close());
  const keysOf = async (text: string, acting = true) => {
    const run = await pool.run(task(messages(text), acting), LONG_MS);
    assert.equal(run.outcome, 'done');
    const result = run.outcome === 'done' ? run.reply.result : undefined;
    assert.equal(result?.outcome, 'applied');
    assert.ok(result?.cache?.near, 'a near-duplicate signature');
    assert.ok(result.cache.near.minhash instanceof Uint32Array && result.cache.near.vector instanceof Float32Array);
    return result.cache;
  };

  const cache = new SemanticCache(new EmbeddedCacheStore({ maxEntries: 10, maxBytes: 1 << 24, ttlMs: LONG_MS }), { similarity: 0.95, maxBytes: 1 << 24 });
  const route = { provider: 'msgvendor', model: 'm', stream: false };
  const miss = await cache.lookup('org', route, await keysOf(TRIP));
  assert.ok(miss.kind === 'miss');
  const reply = { status: 200, contentType: 'application/json', body: Buffer.from('{"content":[{"type":"text","text":"Day 1"}]}') };
  assert.ok(await cache.record(miss.recordKey, reply));
  // shadow computes the same keys as an acting stage
  const near = await cache.lookup('org', route, await keysOf(SAME_REQUEST['one misspelt word'] as string, false));
  assert.ok(near.kind === 'hit' && near.match === 'near', `got ${near.kind}`);
  assert.deepEqual(Buffer.from(near.reply.body ?? []), reply.body);
});
