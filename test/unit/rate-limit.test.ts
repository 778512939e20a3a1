import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from '../../src/errors.js';
import { EmbeddedMeterStore } from '../../src/stores/embedded/meter-store.js';
import { refillAndTake, type MeterStore } from '../../src/stores/meter.js';
import { RedisMeterStore } from '../../src/stores/redis/meter-store.js';
import { redisKeys } from '../../src/stores/redis/prefixes.js';
import { createLogger } from '../../src/telemetry/log.js';
import { createMetrics } from '../../src/telemetry/metrics.js';
import { LOCAL_TOKEN_TTL_MS, RateLimiter, leaseSize, sharedBucket } from '../../src/tenancy/rate-limit.js';

describe('token bucket math', () => {
  const spec = { rate: 10, capacity: 4 };

  it('starts full and grants at most what it holds', () => {
    const first = refillAndTake(undefined, 0, 3, spec);
    assert.deepEqual(first.grant, { granted: 3, waitMs: 0 });
    const second = refillAndTake(first.state, 0, 3, spec);
    assert.equal(second.grant.granted, 1);
    assert.equal(second.grant.waitMs, 100, 'one token every 100 ms at 10/s');
  });

  it('refills at the rate and never past capacity', () => {
    const empty = refillAndTake(undefined, 0, 4, spec).state;
    assert.equal(refillAndTake(empty, 250, 10, spec).grant.granted, 2);
    assert.equal(refillAndTake(empty, 60_000, 10, spec).grant.granted, 4);
  });

  it('keeps fractions: two 50 ms waits make one token', () => {
    const empty = refillAndTake(undefined, 0, 4, spec).state;
    const half = refillAndTake(empty, 50, 1, spec);
    assert.equal(half.grant.granted, 0);
    assert.equal(half.grant.waitMs, 50);
    assert.equal(refillAndTake(half.state, 100, 1, spec).grant.granted, 1);
  });

  it('sizes leases at 50 ms of the cap and the shared bucket at 500 ms (two leases at least)', () => {
    assert.equal(leaseSize(50), 3);
    assert.equal(leaseSize(1), 1);
    assert.equal(leaseSize(1_000_000), 100);
    assert.deepEqual(sharedBucket(50), { rate: 50, capacity: 25 });
    assert.deepEqual(sharedBucket(2), { rate: 2, capacity: 2 });
  });
});

describe('replica-side limiter over leased tokens', () => {
  const setup = (meter: MeterStore = new EmbeddedMeterStore(() => clock.now)) => {
    const metrics = createMetrics();
    const limiter = new RateLimiter({ meter, metrics, log: createLogger('silent'), clock: () => clock.now });
    return { limiter, metrics };
  };
  const clock = { now: 1_000_000 };
  const refusal = (fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      assert.ok(err instanceof GatewayError);
      return err;
    }
    assert.fail('expected a refusal');
  };

  it('waits for the first lease only, then answers from the local batch synchronously', async () => {
    const { limiter } = setup();
    const first = limiter.admit('acme', 100);
    assert.ok(first instanceof Promise, 'an empty replica asks the shared bucket');
    await first;
    assert.ok(!(limiter.admit('acme', 100) instanceof Promise), 'leased tokens answer without a store call');
  });

  it('refuses with 429 and Retry-After once the shared bucket is dry, without asking again until it refills', async () => {
    clock.now = 2_000_000;
    const { limiter, metrics } = setup();
    let admitted = 0;
    for (let i = 0; i < 50; i++) {
      try {
        await limiter.admit('burst', 20);
        admitted++;
      } catch (err) {
        assert.ok(err instanceof GatewayError);
        assert.equal(err.type, 'rate_limited');
        assert.equal(err.status, 429);
        assert.equal(err.retryAfterS, 1);
      }
    }
    assert.equal(admitted, sharedBucket(20).capacity, 'a fresh org gets the shared burst, nothing more');
    const leases = (await metrics.rateLimitLeases.get()).values.reduce((n, v) => n + v.value, 0);
    // one lease per token the bucket held, one that found it dry, then none for the refused rest
    assert.ok(leases <= sharedBucket(20).capacity + 1, `a dry bucket is not asked per request (${leases} leases)`);
    clock.now += 1000;
    await assert.doesNotReject(async () => limiter.admit('burst', 20), 'admitted again after refill');
  });

  it('drops leased tokens left unused for a second', async () => {
    clock.now = 3_000_000;
    const { limiter } = setup();
    await limiter.admit('idle', 100);
    clock.now += LOCAL_TOKEN_TTL_MS;
    assert.ok(limiter.admit('idle', 100) instanceof Promise, 'stale tokens are gone: a new lease is needed');
  });

  it('limits on the replica alone when the shared store is unreachable (fail-open, counted)', async () => {
    clock.now = 4_000_000;
    const unreachable = new RedisMeterStore('redis://127.0.0.1:1', redisKeys('gwtest:unreachable:'));
    const { limiter, metrics } = setup(unreachable);
    await limiter.admit('acme', 2);
    limiter.admit('acme', 2);
    const err = refusal(() => limiter.admit('acme', 2));
    assert.equal(err.type, 'rate_limited');
    const errors = (await metrics.rateLimitLeases.get()).values.find((v) => v.labels.result === 'error');
    assert.equal(errors?.value, 1);
    await unreachable.close();
  });
});
