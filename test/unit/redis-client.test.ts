import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keySlot, perNode, redisClient } from '../../src/stores/redis/client.js';
import { redisKeys } from '../../src/stores/redis/prefixes.js';
import { COLLECTIONS } from '../../src/stores/types.js';

describe('Redis client helpers', () => {
  it('keySlot is Redis Cluster’s: CRC16 of the first non-empty hash tag, else of the whole key (values from CLUSTER KEYSLOT)', () => {
    const asRedisAnswers: Record<string, number> = { somekey: 11058, 'foo{hash_tag}': 2515, 'gw:{doc}-changes': 122, '{}x': 10595, 'a{}{b}': 15033, 'x{y': 2740 };
    for (const [key, slot] of Object.entries(asRedisAnswers)) assert.equal(keySlot(key), slot, key);
  });

  it('every key a configuration-document script or transaction touches shares one slot', () => {
    const keys = redisKeys('gw:');
    const slots = new Set([keys.docChannel, keys.docGeneration, keys.docRestoreLease, ...COLLECTIONS.map((c) => keys.doc(c))].map(keySlot));
    assert.equal(slots.size, 1);
    assert.equal(keySlot(keys.meterSpend('acme:month')), keySlot(keys.meterLeases('acme:month')));
  });

  it('on one node every command goes in one pipeline, with no WAIT', () => {
    const client = redisClient('redis://127.0.0.1:1', {});
    try {
      assert.deepEqual(perNode(client, ['a', 'b', '{c}d'], (k) => k), [{ items: ['a', 'b', '{c}d'], awaitReplica: false }]);
    } finally {
      client.disconnect();
    }
  });
});
