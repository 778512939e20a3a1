import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { RedisCoolDowns } from '../../src/stores/redis/cool-downs.js';
import { redisKeys } from '../../src/stores/redis/prefixes.js';
import { dropRedisPrefix, newRedisPrefix, REDIS_URL } from '../helpers/gateway.js';
import { startRedisProxy, type RedisProxy } from '../helpers/redis-proxy.js';

describe('cool-downs shared through Redis', () => {
  const prefix = newRedisPrefix();
  let proxy: RedisProxy;
  let one: RedisCoolDowns;
  let other: RedisCoolDowns;

  before(async () => {
    proxy = await startRedisProxy();
    one = new RedisCoolDowns(proxy.url, redisKeys(prefix));
    other = new RedisCoolDowns(REDIS_URL, redisKeys(prefix));
    await Promise.all([one.start(), other.start()]);
  });
  after(async () => {
    one?.close();
    other?.close();
    await proxy?.close();
    await dropRedisPrefix(prefix);
  });

  it('a cool-down set by one replica is seen by another, for that org only', async () => {
    other.coolDown('acme', 'openai/a', 60_000);
    // the write is not waited for by the call that failed; here the test waits for Redis to hold it
    let seen: ReadonlySet<string> = new Set();
    for (let i = 0; i < 100 && !seen.has('openai/a'); i++) seen = await one.cooling('acme', ['openai/a', 'openai/b']);
    assert.deepEqual([...seen], ['openai/a']);
    assert.deepEqual([...(await one.cooling('other-org', ['openai/a']))], []);
  });

  it('a Redis that stops answering fails no call: the read gives up within its bound and local cool-downs go on', async () => {
    proxy.hang();
    assert.deepEqual([...(await one.cooling('acme', ['openai/c']))], [], 'the shared state is not read; nothing local cools');
    one.coolDown('acme', 'openai/c', 60_000);
    assert.deepEqual([...(await one.cooling('acme', ['openai/c']))], ['openai/c'], 'this replica still knows its own cool-down');
    proxy.resume();
  });
});
