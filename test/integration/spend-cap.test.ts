import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { Call } from '../../src/pipeline/types.js';
import { spendCapStage } from '../../src/policy/spend-cap.js';
import { countTokens } from 'gpt-tokenizer';
import { costUsd, priciestModel } from '../../src/providers/catalog.js';
import { EmbeddedDocStore } from '../../src/stores/embedded/doc-store.js';
import { EmbeddedMeterStore } from '../../src/stores/embedded/meter-store.js';
import { periodOf, type MeterStore } from '../../src/stores/meter.js';
import { RedisMeterStore } from '../../src/stores/redis/meter-store.js';
import { redisKeys } from '../../src/stores/redis/prefixes.js';
import { createLogger } from '../../src/telemetry/log.js';
import { createMetrics } from '../../src/telemetry/metrics.js';
import { SpendCaps, worstCaseUsd } from '../../src/tenancy/spend-cap.js';
import { completion } from '../fakes/openai.js';
import { sendJson, startFakeVendor, type FakeVendor } from '../fakes/server.js';
import { SECRETS_KEY, TEST_REDIS, devKeySecret, dropRedisPrefix, newRedisPrefix, startTestGateway, testRedis, type Bootstrap, type TestGateway } from '../helpers/gateway.js';
import { startGatewayBehindProxy } from '../helpers/redis-proxy.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

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
      const meter = new RedisMeterStore(TEST_REDIS, redisKeys(prefix));
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
    const reserve = (account: string, id: string, amount: number, cap = 1, leaseMs = 60_000) => meter.reserve({ account, kind: 'day', id, amount, cap, leaseMs });

    it('admits reservations up to the cap and refuses the one that would breach it', async () => {
      const first = await reserve('b1', 'a', 0.6);
      assert.deepEqual([first.admitted, first.settled, first.reserved], [true, 0, 0.6]);
      const refused = await reserve('b1', 'b', 0.5);
      assert.equal(refused.admitted, false);
      assert.equal(refused.reserved, 0.6);
      assert.equal((await reserve('b1', 'c', 0.4)).admitted, true);
    });

    it('settles to the real cost and frees the rest of the reservation', async () => {
      const r = await reserve('b2', 'a', 0.9);
      assert.equal(r.admitted, true);
      await meter.settle('b2', r.period, 'a', 0.25);
      const f = await meter.figures('b2', 'day');
      assert.deepEqual([f.settled, f.reserved], [0.25, 0]);
      assert.equal((await reserve('b2', 'b', 0.75)).admitted, true);
      assert.equal((await reserve('b2', 'c', 0.01)).admitted, false);
    });

    it('lets a reservation lapse when nobody renews it, and keeps a renewed one', async () => {
      assert.equal((await reserve('b3', 'crashed', 0.5, 1, 200)).admitted, true);
      assert.equal((await reserve('b3', 'alive', 0.5, 1, 200)).admitted, true);
      await meter.renew('b3', ['alive'], 60_000);
      await sleep(300);
      const r = await reserve('b3', 'next', 0.5);
      assert.equal(r.admitted, true, 'the crashed replica\'s reservation lapsed');
      assert.equal((await reserve('b3', 'more', 0.1)).admitted, false, 'the renewed one still holds');
    });

    it('never lets 50 concurrent reservations together exceed the cap', async () => {
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => reserve('b4', `r${i}`, 0.03)));
      assert.equal(results.filter((r) => r.admitted).length, 33);
    });

    it('grants tokens up to capacity, then refills at the rate, never past capacity', async () => {
      // 1 token/s: nothing refills between the two takes, even on a loaded machine
      const slow = { rate: 1, capacity: 5 };
      assert.deepEqual(await meter.take('t1', 3, slow), { granted: 3, waitMs: 0 });
      const second = await meter.take('t1', 3, slow);
      assert.equal(second.granted, 2);
      assert.ok(second.waitMs > 0 && second.waitMs <= 1000, `waitMs ${second.waitMs}`);
      // 1000 tokens/s: 50 ms would make 50, the bucket keeps 5
      const fast = { rate: 1000, capacity: 5 };
      assert.equal((await meter.take('t2', 5, fast)).granted, 5);
      await sleep(50);
      assert.equal((await meter.take('t2', 100, fast)).granted, 5);
    });
  });
}

/** The fake's reply usage (12 prompt tokens, 2 of them cached, 5 completion) at gpt-4o prices. */
const REPLY_COST = costUsd('gpt-4o', { input_tokens: 12, output_tokens: 5, cached_tokens: 2 }, 'openai');

const DAY_BODY = Buffer.from(JSON.stringify({ model: 'gpt-4o', max_tokens: 20_000 }));
const capCall = (org: string) => ({ org: { org_id: org }, provider: 'openai', model: 'gpt-4o', body: DAY_BODY }) as unknown as Call;
const newCaps = (meter: MeterStore) => new SpendCaps({ docs: new EmbeddedDocStore(), meter, metrics: createMetrics(), log: createLogger('silent') });

/** The embedded meter, with reservations held until `land()` and every renewal noted: a store answering late. */
function lateMeter(): { meter: MeterStore; land: () => void; renewed: string[] } {
  const inner = new EmbeddedMeterStore();
  let land!: () => void;
  const landed = new Promise<void>((r) => (land = r));
  const renewed: string[] = [];
  const meter: MeterStore = {
    start: () => inner.start(),
    reserve: async (r) => {
      await landed;
      return inner.reserve(r);
    },
    settle: (account, period, id, cost) => inner.settle(account, period, id, cost),
    renew: (account, ids, leaseMs) => {
      renewed.push(...ids);
      return inner.renew(account, ids, leaseMs);
    },
    figures: (account, kind) => inner.figures(account, kind),
    take: (name, want, spec) => inner.take(name, want, spec),
    close: () => inner.close(),
  };
  return { meter, land, renewed };
}

describe('a spend-cap reservation that lands after its call went on unmetered', () => {
  it('is renewed with the others while its call runs, so a long call keeps its worst case counted, and no longer once settled', async () => {
    const { meter, land, renewed } = lateMeter();
    const caps = new SpendCaps({ docs: new EmbeddedDocStore(), meter, metrics: createMetrics(), log: createLogger('silent'), leaseMs: 30 });
    try {
      await caps.setCap('acme', 100, 'day');
      const late = await spendCapStage(caps).admit(capCall('acme'));
      land();
      const held = await eventually(async () => renewed.length, (n) => n > 0);
      assert.ok(held > 0, 'the landed reservation was never renewed: it lapses with its lease while its call runs');
      late.settle(0.1);
      await sleep(50);
      const after = renewed.length;
      await sleep(100);
      assert.equal(renewed.length, after, 'a settled reservation is not renewed');
    } finally {
      caps.close();
    }
  });
});

describe('spend cap period reset: the embedded store\'s clock alone decides the period', () => {
  it('a new UTC day starts from zero and admits again', async () => {
    // the store's own clock, moved by the test: nothing here reads today's date
    const clock = { now: Date.parse('2026-11-21T23:59:00Z') };
    const meter = new EmbeddedMeterStore(() => clock.now);
    const caps = newCaps(meter);
    try {
      await caps.setCap('acme', 0.5, 'day');
      const stage = spendCapStage(caps);
      const first = await stage.admit(capCall('acme'));
      first.settle(0.4);
      const settled = await eventually(() => caps.status('acme'), (s) => s?.consumed_usd === 0.4);
      assert.deepEqual(settled, { cap_usd: 0.5, period: 'day', consumed_usd: 0.4, resets_at: '2026-11-22T00:00:00.000Z' });
      await assert.rejects(async () => stage.admit(capCall('acme')), { type: 'budget_exhausted', status: 402 });
      clock.now = Date.parse('2026-11-22T00:00:01Z');
      assert.deepEqual(await caps.status('acme'), { cap_usd: 0.5, period: 'day', consumed_usd: 0, resets_at: '2026-11-23T00:00:00.000Z' });
      (await stage.admit(capCall('acme'))).settle(0);
    } finally {
      caps.close();
    }
  });

  it('a call reserved before midnight and settled after it does not count in the new day', async () => {
    const clock = { now: Date.parse('2026-01-31T23:59:59Z') };
    const caps = newCaps(new EmbeddedMeterStore(() => clock.now));
    try {
      await caps.setCap('acme', 0.5, 'month');
      const straddling = await spendCapStage(caps).admit(capCall('acme'));
      clock.now = Date.parse('2026-02-01T00:00:01Z');
      straddling.settle(0.3);
      assert.deepEqual(await caps.status('acme'), { cap_usd: 0.5, period: 'month', consumed_usd: 0, resets_at: '2026-03-01T00:00:00.000Z' });
    } finally {
      caps.close();
    }
  });
});

describe('spend cap period reset: Redis TIME alone decides the period', () => {
  const prefix = newRedisPrefix();
  const keys = redisKeys(prefix);
  const redis = testRedis();
  let meter: RedisMeterStore;
  before(async () => {
    meter = new RedisMeterStore(TEST_REDIS, keys);
    await meter.start();
  });
  after(async () => {
    await meter.close();
    redis.disconnect();
    await dropRedisPrefix(prefix);
  });
  const redisNow = async () => {
    const [s, us] = await redis.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  };

  it('a new UTC day starts from zero and admits again', async () => {
    const caps = newCaps(meter);
    try {
      await caps.setCap('acme', 0.5, 'day');
      const before = await redisNow();
      const first = await spendCapStage(caps).admit(capCall('acme'));
      first.settle(0.4);
      const settled = await eventually(() => caps.status('acme'), (s) => s?.consumed_usd === 0.4);
      const afterwards = await redisNow();
      // the period and its reset come from Redis TIME (either side of a midnight the test might straddle)
      const ends = [periodOf(before, 'day').end, periodOf(afterwards, 'day').end].map((t) => new Date(t).toISOString());
      assert.ok(ends.includes(settled?.resets_at ?? ''), `resets_at ${settled?.resets_at} not from Redis TIME (${ends.join(', ')})`);
      // the record expires when its period ends, by the same clock
      const spendKey = keys.meterSpend('acme:day');
      assert.equal(new Date(Number(await redis.call('PEXPIRETIME', spendKey))).toISOString(), settled?.resets_at);
      await assert.rejects(async () => spendCapStage(caps).admit(capCall('acme')), { type: 'budget_exhausted', status: 402 });
      // Redis's clock passes midnight: the record now holds a period Redis TIME has left
      await redis.hset(spendKey, 'period', periodOf(before - 86_400_000, 'day').id);
      const next = await caps.status('acme');
      assert.equal(next?.consumed_usd, 0);
      (await spendCapStage(caps).admit(capCall('acme'))).settle(0);
    } finally {
      caps.close();
    }
  });

  it('computes period ids and ends in Lua exactly as periodOf does', async () => {
    const script = `${readFileSync(new URL('../../src/stores/redis/meter-period.lua', import.meta.url), 'utf8')}\nlocal id, ends = period_of(tonumber(ARGV[1]), ARGV[2])\nreturn {id, ends}`;
    const instants = ['1970-01-01T00:00:00Z', '1999-12-31T23:59:59.999Z', '2000-02-29T12:00:00Z', '2026-11-21T23:59:00Z', '2026-11-22T00:00:00Z', '2026-12-31T23:59:59.999Z', '2028-02-29T00:00:00Z', '2100-02-28T23:00:00Z', '2100-03-01T00:00:00Z'];
    for (const at of instants) {
      for (const kind of ['day', 'month'] as const) {
        const ms = Date.parse(at);
        const [id, ends] = (await redis.eval(script, 0, String(ms), kind)) as [string, number];
        const want = periodOf(ms, kind);
        assert.deepEqual({ id, ends }, { id: want.id, ends: want.end }, `${kind} of ${at}`);
      }
    }
  });
});

/** A fake OpenAI answering after `hold.ms`, so concurrent calls are all in flight at once. */
/** an Azure-style deployment name: the reply names the catalog model that served it */
const DEPLOYMENT = 'prod-chat-deployment';

async function startHeldOpenAI(hold: { ms: number }): Promise<FakeVendor> {
  return startFakeVendor(async (req, res) => {
    const { model, stream } = JSON.parse(req.body.toString('utf8')) as { model: string; stream?: boolean };
    await sleep(hold.ms);
    if (stream) {
      // a stream the caller did not ask usage for: no usage event at all
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model, choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: 'stop' }] })}\n\n`);
      return void res.end('data: [DONE]\n\n');
    }
    sendJson(res, 200, completion(model === DEPLOYMENT ? 'gpt-4o-2024-08-06' : model));
  });
}

const ORGS = ['capped', 'settle', 'burst', 'unseen', 'deploy', 'finetune'] as const;
const key = (org: string) => devKeySecret(`spend-${org}`);
const BOOTSTRAP: Bootstrap = {
  // a high request rate so the rate limit never interferes with the spend figures
  orgs: ORGS.map((org_id) => ({ org_id, rps_cap: 10_000 })),
  dev_keys: ORGS.map((org) => ({ org_id: org, dev_key_id: `dk-${org}`, api_key: key(org) })),
};

async function setCap(gw: TestGateway, org: string, cap: number | null, period?: string) {
  const res = await fetch(`${gw.url}/api/v1/spend_cap/update`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key(org)}`, 'content-type': 'application/json' },
    body: JSON.stringify(period ? { cap_usd: cap, period } : { cap_usd: cap }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()) as { status: string; spend_cap: { cap_usd: number | null; period: string; consumed_usd: number; resets_at: string | null } };
}

async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  let v = await read();
  for (let i = 0; i < 100 && !ok(v); i++) {
    await sleep(20);
    v = await read();
  }
  return v;
}

for (const mode of ['embedded', 'redis'] as const) {
  describe(`spend cap through the gateway (${mode} store)`, () => {
    const hold = { ms: 0 };
    let fake: FakeVendor;
    let gw: TestGateway;
    before(async () => {
      fake = await startHeldOpenAI(hold);
      gw = await startTestGateway({ bootstrap: BOOTSTRAP, redis: mode === 'redis', env: { GW_UPSTREAM_OPENAI: fake.origin } });
    });
    after(async () => {
      await gw.close();
      await fake.close();
    });
    const client = (org: string) => new OpenAI({ apiKey: key(org), baseURL: `${gw.url}/v1`, defaultHeaders: { 'x-gw-provider-key': 'sk-upstream' }, maxRetries: 0 });

    it('sets, reports and removes a cap', async () => {
      const set = await setCap(gw, 'capped', 0.001, 'day');
      assert.equal(set.status, 'success');
      assert.equal(set.spend_cap.cap_usd, 0.001);
      assert.equal(set.spend_cap.period, 'day');
      assert.equal(set.spend_cap.consumed_usd, 0);
      // the store's clock decides which midnight (Redis TIME in redis mode): only the shape is the test's to know
      assert.match(set.spend_cap.resets_at ?? '', /^\d{4}-\d\d-\d\dT00:00:00\.000Z$/);
      assert.equal((await setCap(gw, 'capped', 0.001)).spend_cap.period, 'day', 'an omitted period keeps the current one');
    });

    it('refuses a call whose worst case would breach the cap: 402 budget_exhausted with the figures in body and headers', async () => {
      await setCap(gw, 'capped', 0.001, 'day');
      const before = fake.received.length;
      const err = await client('capped')
        .chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] })
        .then(() => assert.fail('expected 402'), (e: unknown) => e);
      assert.ok(err instanceof OpenAI.APIError);
      assert.equal(err.status, 402);
      assert.equal(err.headers?.get('x-gw-error'), 'budget_exhausted');
      assert.equal(err.headers?.get('x-gw-budget-cap-usd'), '0.001');
      assert.equal(err.headers?.get('x-gw-budget-consumed-usd'), '0');
      const resetsAt = err.headers?.get('x-gw-budget-resets-at');
      assert.match(resetsAt ?? '', /^\d{4}-\d\d-\d\dT00:00:00\.000Z$/);
      const body = err.error as Record<string, unknown>;
      assert.equal(body['type'], 'budget_exhausted');
      assert.equal(body['cap_usd'], 0.001);
      assert.equal(body['consumed_usd'], 0);
      assert.equal(body['resets_at'], resetsAt);
      assert.equal(fake.received.length, before, 'nothing went upstream');

      await setCap(gw, 'capped', null);
      const ok = await client('capped').chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(ok.choices[0]?.message.content, 'Hello from the fake.', 'a removed cap refuses nothing');
    });

    it('settles each call to its real cost: usage × catalog price', async () => {
      await setCap(gw, 'settle', 1);
      await client('settle').chat.completions.create({ model: 'gpt-4o', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
      await client('settle').chat.completions.create({ model: 'gpt-4o', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
      const want = Math.round(2 * REPLY_COST * 1e9) / 1e9;
      const got = await eventually(() => setCap(gw, 'settle', 1), (r) => r.spend_cap.consumed_usd === want);
      assert.equal(got.spend_cap.consumed_usd, want);
    });

    it('a stream without a usage event is charged for the tokens the gateway counted, not its worst case', async () => {
      await setCap(gw, 'unseen', 100);
      // no max_tokens: the worst case reserves the model's whole output ($0.16 at gpt-4o prices)
      const body = { model: 'gpt-4o', stream: true as const, messages: [{ role: 'user' as const, content: 'hi' }] };
      const stream = await client('unseen').chat.completions.create(body);
      for await (const _ of stream) {
        // drain
      }
      // the fake streams the one word `hi`; the prompt is counted from the body sent upstream
      // (the SDK serializes the same fields in the same order)
      const counted = { input_tokens: countTokens(JSON.stringify(body)), output_tokens: countTokens('hi'), cached_tokens: 0 };
      const want = Math.round(costUsd('gpt-4o', counted, 'openai') * 1e9) / 1e9;
      const got = await eventually(() => setCap(gw, 'unseen', 100), (r) => r.spend_cap.consumed_usd > 0);
      assert.equal(got.spend_cap.consumed_usd, want);
      assert.ok(want < worstCaseUsd('gpt-4o', Buffer.from(JSON.stringify(body)), 'openai') / 10, 'not the worst case');
    });

    it('settles a fine-tune the catalog does not know at its provider\'s priciest model, never $0', async () => {
      await setCap(gw, 'finetune', 100);
      const model = 'ft:gpt-4o-mini:org:x:id';
      await client('finetune').chat.completions.create({ model, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
      const want = Math.round(costUsd(priciestModel('openai').id, { input_tokens: 12, output_tokens: 5, cached_tokens: 2 }, 'openai') * 1e9) / 1e9;
      const got = await eventually(() => setCap(gw, 'finetune', 100), (r) => r.spend_cap.consumed_usd > 0);
      assert.ok(want > 0);
      assert.equal(got.spend_cap.consumed_usd, want);
    });

    it('prices a deployment name the catalog does not know by the model the reply names', async () => {
      await setCap(gw, 'deploy', 100);
      await client('deploy').chat.completions.create({ model: DEPLOYMENT, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
      const want = Math.round(REPLY_COST * 1e9) / 1e9;
      const got = await eventually(() => setCap(gw, 'deploy', 100), (r) => r.spend_cap.consumed_usd > 0);
      assert.equal(got.spend_cap.consumed_usd, want);
    });

    it('50 concurrent first calls of a fresh tenant never together exceed the cap', async () => {
      const body = JSON.stringify({ model: 'gpt-4o', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
      const worst = worstCaseUsd('gpt-4o', Buffer.from(body), 'openai');
      const cap = worst * 10.5;
      await setCap(gw, 'burst', cap);
      hold.ms = 300;
      try {
        const statuses = await Promise.all(
          Array.from({ length: 50 }, () =>
            fetch(`${gw.url}/v1/chat/completions`, {
              method: 'POST',
              headers: { authorization: `Bearer ${key('burst')}`, 'x-gw-provider-key': 'sk-upstream', 'content-type': 'application/json' },
              body,
            }).then(async (r) => (await r.arrayBuffer(), r.status)),
          ),
        );
        assert.equal(statuses.filter((s) => s === 200).length, 10, 'exactly the reservations that fit');
        assert.equal(statuses.filter((s) => s === 402).length, 40);
      } finally {
        hold.ms = 0;
      }
      const after = await eventually(() => setCap(gw, 'burst', cap), (r) => r.spend_cap.consumed_usd > 0);
      assert.ok(after.spend_cap.consumed_usd <= cap);
      assert.equal(after.spend_cap.consumed_usd, Math.round(10 * REPLY_COST * 1e9) / 1e9);
    });
  });
}

/** A TCP relay to Redis that can be cut, to take Redis away from a running gateway. */
async function startRedisRelay(): Promise<{ url: string; cut(): void; restore(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let down = false;
  const server: Server = createServer((client) => {
    if (down) return void client.destroy();
    const upstream = connect(6379, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`,
    cut() {
      down = true;
      for (const s of sockets) s.destroy();
    },
    restore() {
      down = false;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('spend cap when Redis is unreachable (fail-open: metering never refuses a call)', () => {
  let fake: FakeVendor;
  let relay: Awaited<ReturnType<typeof startRedisRelay>>;
  let gw: TestGateway;
  const prefix = newRedisPrefix();
  before(async () => {
    fake = await startHeldOpenAI({ ms: 0 });
    relay = await startRedisRelay();
    gw = await startTestGateway({
      bootstrap: BOOTSTRAP,
      env: { GW_UPSTREAM_OPENAI: fake.origin, GW_REDIS_URL: relay.url, GW_REDIS_PREFIX: prefix, GW_SECRETS_KEY: SECRETS_KEY, GW_WORKERS: '1' },
    });
  });
  after(async () => {
    relay.restore();
    await sleep(300);
    await gw.close();
    await relay.close();
    await fake.close();
    await dropRedisPrefix(prefix);
  });

  it('relays the call with a normal 200 and counts the unmetered call', async () => {
    await setCap(gw, 'capped', 0.5);
    relay.cut();
    await sleep(50);
    const reply = await new OpenAI({ apiKey: key('capped'), baseURL: `${gw.url}/v1`, defaultHeaders: { 'x-gw-provider-key': 'sk-upstream' }, maxRetries: 0 }).chat.completions.create({
      model: 'gpt-4o',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(reply.choices[0]?.message.content, 'Hello from the fake.');
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.match(metrics, /gw_spend_cap_store_failures_total\{op="reserve"\} 1\b/);
  });
});

describe('a call the request deadline answered is never sent afterwards', () => {
  let fake: FakeVendor;
  let behind: Awaited<ReturnType<typeof startGatewayBehindProxy>>;
  before(async () => {
    fake = await startHeldOpenAI({ ms: 0 });
    // a reservation is waited for at most RESERVE_WAIT_MS (250 ms): the deadline must pass while it waits
    behind = await startGatewayBehindProxy(BOOTSTRAP, { GW_UPSTREAM_OPENAI: fake.origin, GW_REQUEST_DEADLINE_S: '0.02' });
  });
  after(async () => {
    await behind.close();
    await fake.close();
  });

  it('answers 504 gateway_timeout while the reservation waits, and the vendor never sees the call', async () => {
    // the 20 ms request deadline binds this write too: on a loaded machine it may answer 504 (and change nothing), so it is sent until it lands
    for (let attempt = 1; ; attempt++) {
      const res = await fetch(`${behind.gw.url}/api/v1/spend_cap/update`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key('capped')}`, 'content-type': 'application/json' },
        body: JSON.stringify({ cap_usd: 0.5 }),
      });
      const text = await res.text();
      if (res.status === 200) break;
      assert.ok(res.status === 504 && attempt < 50, `setting the cap: ${res.status} ${text}`);
    }
    behind.proxy.hang();
    const before = fake.received.length;
    const res = await fetch(`${behind.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key('capped')}`, 'x-gw-provider-key': 'sk-upstream', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 504);
    assert.equal(res.headers.get('x-gw-error'), 'gateway_timeout');
    await res.arrayBuffer();
    // the reservation stops being waited for meanwhile and the call goes on unmetered: the caller was already told to retry
    await sleep(2000);
    assert.equal(fake.received.length, before, 'a call answered 504 went to the vendor anyway');
    behind.proxy.resume();
  });
});
