import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { CacheEntry, CacheStore } from '../../src/stores/cache.js';
import { EmbeddedCacheStore } from '../../src/stores/embedded/cache-store.js';
import { RedisCacheStore } from '../../src/stores/redis/cache-store.js';
import { redisKeys } from '../../src/stores/redis/prefixes.js';
import { dropRedisPrefix, keysMatching, newRedisPrefix, TEST_REDIS, testRedis } from '../helpers/gateway.js';

const TTL_MS = 3_600_000;

function entry(text: string, bands: string[] = []): CacheEntry {
  const minhash = new Uint32Array(128).map((_, i) => i * 7 + text.length);
  const vector = new Float32Array(256).fill(1 / 16);
  return {
    reply: { status: 200, contentType: 'application/json', body: Buffer.from(JSON.stringify({ text })), usage: { input_tokens: 5, output_tokens: 7 } },
    ...(bands.length > 0 && { near: { signature: { preceding: 'p', invariants: 'i', minhash, vector }, bands } }),
  };
}

const text = (body: Uint8Array | undefined) => Buffer.from(body ?? []).toString('utf8');

/** What every cache store does, embedded or Redis. */
function behaves(name: string, open: () => Promise<CacheStore>) {
  describe(`${name} cache store`, () => {
    it('gets what was put, by org and id; another org never sees it', async () => {
      const store = await open();
      await store.put('org-a', 'id1', entry('a reply'));
      assert.equal(text((await store.get('org-a', 'id1'))?.body), '{"text":"a reply"}');
      assert.equal(await store.get('org-b', 'id1'), undefined, 'entries never cross orgs');
      assert.deepEqual((await store.get('org-a', 'id1'))?.usage, { input_tokens: 5, output_tokens: 7 });
    });

    it('finds near-duplicate candidates by band key, newest first, within the limit, with their signature intact', async () => {
      const store = await open();
      await store.put('org-a', 'old', entry('old', ['b1', 'b2']));
      await store.put('org-a', 'new', entry('newer', ['b2', 'b3']));
      const found = await store.candidates('org-a', ['b2', 'b1'], 10);
      assert.deepEqual(found.map((c) => c.id), ['new', 'old']);
      assert.deepEqual([...(found[0]?.signature.minhash ?? [])], [...(entry('newer', ['x']).near?.signature.minhash ?? [])]);
      assert.equal(found[0]?.signature.vector[3], 1 / 16);
      assert.equal(found[0]?.signature.preceding, 'p');
      assert.deepEqual((await store.candidates('org-a', ['b2'], 1)).map((c) => c.id), ['new']);
      assert.deepEqual(await store.candidates('org-b', ['b1', 'b2', 'b3'], 10), [], 'other orgs have no candidates');
    });

    it('keeps a stream as its events', async () => {
      const store = await open();
      const events = ['data: {"a":1}\n\n', 'data: [DONE]\n\n'].map((e) => Buffer.from(e));
      await store.put('org-a', 's', { reply: { status: 200, contentType: 'text/event-stream', events } });
      const got = await store.get('org-a', 's');
      assert.deepEqual(got?.events?.map((e) => text(e)), ['data: {"a":1}\n\n', 'data: [DONE]\n\n']);
      assert.equal(got?.body, undefined);
    });
  });
}

describe('embedded', () => {
  behaves('embedded', async () => new EmbeddedCacheStore({ maxEntries: 100, maxBytes: 1 << 20, ttlMs: TTL_MS }));

  it('is bounded by entries: the least recently used goes first, and leaves its bands', async () => {
    const store = new EmbeddedCacheStore({ maxEntries: 2, maxBytes: 1 << 20, ttlMs: TTL_MS });
    await store.put('o', 'a', entry('a', ['band']));
    await store.put('o', 'b', entry('b', ['band']));
    await store.get('o', 'a'); // a is now the most recently used
    await store.put('o', 'c', entry('c', ['band']));
    assert.equal(await store.get('o', 'b'), undefined);
    assert.ok(await store.get('o', 'a'));
    assert.deepEqual((await store.candidates('o', ['band'], 10)).map((c) => c.id).sort(), ['a', 'c']);
    assert.equal(store.size.entries, 2);
  });

  it('is bounded by bytes; an entry larger than the whole bound is not kept', async () => {
    const store = new EmbeddedCacheStore({ maxEntries: 100, maxBytes: 10_000, ttlMs: TTL_MS });
    const big = (n: number): CacheEntry => ({ reply: { status: 200, contentType: 'application/json', body: new Uint8Array(n) } });
    for (const id of ['a', 'b', 'c', 'd']) await store.put('o', id, big(2000));
    assert.ok(store.size.bytes <= 10_000, `held ${store.size.bytes}`);
    assert.equal(await store.get('o', 'a'), undefined, 'the oldest was evicted');
    assert.ok(await store.get('o', 'd'));
    await store.put('o', 'huge', big(20_000));
    assert.equal(await store.get('o', 'huge'), undefined);
  });

  it('forgets an entry after its TTL', async () => {
    let now = 1_000;
    const store = new EmbeddedCacheStore({ maxEntries: 10, maxBytes: 1 << 20, ttlMs: 500, clock: () => now });
    await store.put('o', 'a', entry('a', ['band']));
    now += 499;
    assert.ok(await store.get('o', 'a'));
    now += 1;
    assert.equal(await store.get('o', 'a'), undefined);
    assert.deepEqual(await store.candidates('o', ['band'], 10), []);
    assert.equal(store.size.entries, 0);
  });
});

describe('redis', () => {
  const prefix = newRedisPrefix();
  const opened: CacheStore[] = [];
  after(async () => {
    await Promise.all(opened.map((s) => s.close()));
    await dropRedisPrefix(prefix);
  });
  const open = async (ttlMs = TTL_MS) => {
    const store = new RedisCacheStore(TEST_REDIS, redisKeys(prefix), { ttlMs });
    await store.start();
    opened.push(store);
    return store;
  };
  let n = 0;
  // each store of the shared behaviour under its own namespace, so their ids do not meet
  behaves('redis', async () => {
    const store = new RedisCacheStore(TEST_REDIS, redisKeys(`${prefix}${n++}:`), { ttlMs: TTL_MS });
    await store.start();
    opened.push(store);
    return store;
  });

  it('two replicas share one cache: what one stores the other reads, candidates included', async () => {
    const one = await open();
    const two = await open();
    await one.put('org-a', 'shared', entry('from replica one', ['shared-band']));
    assert.equal(text((await two.get('org-a', 'shared'))?.body), '{"text":"from replica one"}');
    assert.deepEqual((await two.candidates('org-a', ['shared-band'], 5)).map((c) => c.id), ['shared']);
  });

  it('every key of an entry carries the TTL and the org as its hash tag', async () => {
    const store = await open(60_000);
    await store.put('org-t', 'ttl', entry('t', ['ttl-band']));
    const admin = testRedis();
    try {
      const keys = (await keysMatching(admin, `${prefix}cache:*org-t*`)).sort();
      assert.equal(keys.length, 3, keys.join(' '));
      for (const key of keys) {
        assert.ok(key.startsWith(`${prefix}cache:{org-t}:`), key);
        const ttl = await admin.pttl(key);
        assert.ok(ttl > 0 && ttl <= 60_000, `${key} ttl ${ttl}`);
      }
    } finally {
      admin.disconnect();
    }
  });

  it('a Redis that is away makes calls fail at once (the caller relays), never hang', async () => {
    const store = new RedisCacheStore('redis://127.0.0.1:1', redisKeys(prefix), { ttlMs: TTL_MS });
    await store.start();
    opened.push(store);
    await assert.rejects(store.get('o', 'x'));
    await assert.rejects(store.put('o', 'x', entry('x')));
  });
});
