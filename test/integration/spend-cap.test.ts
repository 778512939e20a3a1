import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { EmbeddedMeterStore } from '../../src/stores/embedded/meter-store.js';
import type { MeterStore } from '../../src/stores/meter.js';
import { RedisMeterStore } from '../../src/stores/redis/meter-store.js';
import { redisKeys } from '../../src/stores/redis/prefixes.js';
import { REDIS_URL, dropRedisPrefix, newRedisPrefix } from '../helpers/gateway.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const HOUR = 3_600_000;

/** The same suite over both metering stores. */
const STORES: Array<{ name: string; open(): Promise<{ meter: MeterStore; drop(): Promise<void> }> }> = [
  {
    name: 'embedded',
    open: async () => ({ meter: new EmbeddedMeterStore(), drop: async () => undefined }),
  },
  {
    name: 'redis',
    open: async () => {
      const prefix = newRedisPrefix();
      const meter = new RedisMeterStore(REDIS_URL, redisKeys(prefix));
      await meter.start();
      return { meter, drop: () => dropRedisPrefix(prefix) };
    },
  },
];

for (const kind of STORES) {
  describe(`metering store (${kind.name})`, () => {
    let meter: MeterStore;
    let drop: () => Promise<void>;
    before(async () => ({ meter, drop } = await kind.open()));
    after(async () => {
      await meter.close();
      await drop();
    });
    const reserve = (bucket: string, id: string, amount: number, cap = 1, leaseMs = 60_000) =>
      meter.reserve({ bucket, id, amount, cap, leaseMs, keepUntil: Date.now() + HOUR });

    it('admits reservations up to the cap and refuses the one that would breach it', async () => {
      assert.deepEqual(await reserve('b1', 'a', 0.6), { admitted: true, settled: 0, reserved: 0.6 });
      const refused = await reserve('b1', 'b', 0.5);
      assert.equal(refused.admitted, false);
      assert.equal(refused.reserved, 0.6);
      assert.equal((await reserve('b1', 'c', 0.4)).admitted, true);
    });

    it('settles to the real cost and frees the rest of the reservation', async () => {
      assert.equal((await reserve('b2', 'a', 0.9)).admitted, true);
      await meter.settle('b2', 'a', 0.25);
      assert.deepEqual(await meter.figures('b2'), { settled: 0.25, reserved: 0 });
      assert.equal((await reserve('b2', 'b', 0.75)).admitted, true);
      assert.equal((await reserve('b2', 'c', 0.01)).admitted, false);
    });

    it('lets a reservation lapse when nobody renews it, and keeps a renewed one', async () => {
      assert.equal((await reserve('b3', 'crashed', 0.5, 1, 150)).admitted, true);
      assert.equal((await reserve('b3', 'alive', 0.5, 1, 150)).admitted, true);
      await sleep(80);
      await meter.renew('b3', ['alive'], 60_000);
      await sleep(120);
      const r = await reserve('b3', 'next', 0.5);
      assert.equal(r.admitted, true, 'the crashed replica\'s reservation lapsed');
      assert.equal((await reserve('b3', 'more', 0.1)).admitted, false, 'the renewed one still holds');
    });

    it('never lets 50 concurrent reservations together exceed the cap', async () => {
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => reserve('b4', `r${i}`, 0.03)));
      assert.equal(results.filter((r) => r.admitted).length, 33);
    });

    it('grants tokens up to capacity, then refills at the rate', async () => {
      const spec = { rate: 100, capacity: 5 };
      assert.deepEqual(await meter.take('t1', 3, spec), { granted: 3, waitMs: 0 });
      const second = await meter.take('t1', 3, spec);
      assert.equal(second.granted, 2);
      assert.ok(second.waitMs > 0 && second.waitMs <= 10, `waitMs ${second.waitMs}`);
      await sleep(60);
      const third = await meter.take('t1', 10, spec);
      assert.equal(third.granted, 5, 'refilled to capacity, never past it');
    });
  });
}
