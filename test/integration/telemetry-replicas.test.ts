import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startFakeOpenAI } from '../fakes/openai.js';
import type { FakeVendor } from '../fakes/server.js';
import { call, errorMessage, type Answer } from '../helpers/api.js';
import { ADMIN_KEY, CONFIG_SECRET, devKeySecret, dropRedisPrefix, keysMatching, newRedisPrefix, REDIS_URL, SECRETS_KEY, startTestGateway, testRedis, UNLIMITED_RPS, type Bootstrap, type TestGateway } from '../helpers/gateway.js';
import { privateRedis } from '../helpers/private-redis.js';
import { startGatewayBehindProxy } from '../helpers/redis-proxy.js';
import { eventually } from '../helpers/wait.js';

const acmeKey = devKeySecret('tel-acme');
const globexKey = devKeySecret('tel-globex');
const bootstrap: Bootstrap = {
  orgs: [
    { org_id: 'acme', rps_cap: UNLIMITED_RPS },
    { org_id: 'globex', rps_cap: UNLIMITED_RPS },
  ],
  dev_keys: [
    { org_id: 'acme', key_id: 'key_acmeacmeacmeacmeacme', api_key: acmeKey },
    { org_id: 'globex', key_id: 'key_globexglobexglobexgl', api_key: globexKey },
  ],
};

/** one chat call through `gw` with the usage-dimension headers; returns its request id */
async function chat(gw: TestGateway, headers: Record<string, string> = {}, key = acmeKey): Promise<string> {
  const id = `req-${randomUUID()}`;
  const res = await call(gw, '/v1/chat/completions', {
    key,
    headers: { 'x-gw-provider-key': 'sk-upstream', 'x-request-id': id, 'x-gw-team': 'quant', 'x-gw-use-case': 'summarize', 'x-gw-session': 'sess-1', ...headers },
    body: { model: 'gpt-4o', messages: [{ role: 'user', content: `hello ${id}` }] },
  });
  assert.equal(res.status, 200, JSON.stringify(res.json));
  assert.equal(res.headers.get('x-gw-request-id'), id);
  return id;
}

/** one chat call and its wall time (reported by the stall and outage tests, never asserted) */
async function timedChat(gw: TestGateway, headers: Record<string, string> = {}): Promise<{ id: string; ms: number }> {
  const t = performance.now();
  const id = await chat(gw, headers);
  return { id, ms: performance.now() - t };
}
const median = (xs: number[]): number => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] as number;
const durable = (gw: TestGateway, id: string, key = acmeKey) => call(gw, `/api/v1/tenant/request/${encodeURIComponent(id)}`, { key });
const ids = (a: Answer): string[] => (a.json['data'] as Array<{ request_id: string }>).map((r) => r.request_id);

describe('telemetry across replicas on one Redis', () => {
  let fake: FakeVendor;
  let prefix: string;
  const replicas: TestGateway[] = [];
  const start = async () => startTestGateway({ redisPrefix: prefix, env: { GW_UPSTREAM_OPENAI: fake.origin } });

  before(async () => {
    fake = await startFakeOpenAI();
    prefix = newRedisPrefix();
    replicas.push(await startTestGateway({ redisPrefix: prefix, bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin } }));
    replicas.push(await start(), await start());
  });
  after(async () => {
    for (const gw of replicas) await gw.close();
    await fake.close();
    await dropRedisPrefix(prefix);
  });

  it('a request served by one replica is listed, read and summed identically by the other two', async () => {
    const [a, b, c] = replicas as [TestGateway, TestGateway, TestGateway];
    const id = await chat(a, { 'x-gw-cost-centre': 'cc-7' });
    await eventually(async () => (await durable(b, id)).status === 200, 'the row readable from another replica');

    const one = await Promise.all([a, b, c].map((gw) => durable(gw, id)));
    for (const r of one) assert.deepEqual(r.json, one[0]?.json);
    const { request, decision, source } = one[0]?.json as { request: Record<string, unknown>; decision: Record<string, unknown>; source: unknown };
    assert.equal(request['request_id'], id);
    assert.equal(request['tenant_id'], 'acme');
    assert.equal(request['key_id'], 'key_acmeacmeacmeacmeacme');
    assert.equal(request['team'], 'quant');
    assert.equal(request['use_case'], 'summarize');
    assert.equal(request['session_id'], 'sess-1');
    assert.equal(request['cost_centre'], 'cc-7');
    assert.equal(request['status'], 200);
    assert.equal(request['egress_mode'], 'pass_through');
    assert.equal(request['retry'], false);
    assert.ok(Number(request['tokens_in']) > 0 && Number(request['cost_usd']) > 0);
    assert.equal(decision['served_by'], 'pipeline');
    assert.deepEqual(decision['fail_open'], null);
    assert.ok(Array.isArray(decision['stages']) && (decision['stages'] as unknown[]).length > 0);
    assert.deepEqual(source, { store: 'durable' });
    for (const field of JSON.stringify(one[0]?.json).matchAll(/hello req-/g)) assert.fail(`a body leaked into the row: ${field[0]}`);

    const lists = await Promise.all([a, b, c].map((gw) => call(gw, '/api/v1/tenant/requests?team=quant&decision=true', { key: acmeKey })));
    for (const l of lists) {
      assert.equal(l.status, 200);
      assert.deepEqual(l.json, lists[0]?.json);
    }
    assert.ok(ids(lists[0] as Answer).includes(id));
    const listed = (lists[0]?.json['data'] as Array<Record<string, unknown>>).find((r) => r['request_id'] === id);
    assert.equal((listed?.['decision'] as Record<string, unknown>)['served_by'], 'pipeline');

    for (const window of ['1h', '24h']) {
      const usage = await Promise.all([a, b, c].map((gw) => call(gw, `/api/v1/usage?group_by=team,cost_center&window=${window}&bucket=hour`, { key: acmeKey })));
      for (const u of usage) assert.deepEqual(u.json, usage[0]?.json, `window ${window}`);
      const rows = usage[0]?.json['data'] as Array<Record<string, unknown>>;
      const cc7 = rows.filter((r) => r['cost_centre'] === 'cc-7');
      assert.equal(cc7.length, 1, JSON.stringify(rows));
      assert.equal(cc7[0]?.['team'], 'quant');
      assert.equal(cc7[0]?.['requests'], 1);
      assert.equal(cc7[0]?.['cost_usd'], request['cost_usd']);
      assert.match(String(cc7[0]?.['bucket_start']), /^\d{4}-\d\d-\d\dT\d\d:00:00\.000Z$/);
      assert.deepEqual(usage[0]?.json['group_by'], ['team', 'cost_centre']);
    }
    // seven days and a week's bucket are summed from day rollups (and the first part-day's hours)
    for (const query of ['window=7d', 'window=30d&bucket=week']) {
      const usage = await Promise.all([a, b, c].map((gw) => call(gw, `/api/v1/usage?group_by=team,cost_center&cost_centre=cc-7&${query}`, { key: acmeKey })));
      for (const u of usage) assert.deepEqual(u.json, usage[0]?.json, query);
      const rows = usage[0]?.json['data'] as Array<Record<string, unknown>>;
      assert.equal(rows.length, 1, `${query}: ${JSON.stringify(rows)}`);
      assert.deepEqual([rows[0]?.['team'], rows[0]?.['requests'], rows[0]?.['cost_usd']], ['quant', 1, request['cost_usd']], query);
    }
  });

  it('the inspector and request logs answer from the replica that served the request only', async () => {
    const [a, b] = replicas as [TestGateway, TestGateway];
    const id = await chat(a);
    const onA = await call(a, '/api/v1/requests?tenant_id=acme&provider=openai', { key: acmeKey });
    assert.equal(onA.status, 200);
    const row = (onA.json['data'] as Array<Record<string, unknown>>)[0];
    assert.equal(row?.['request_id'], id, 'newest first');
    assert.equal(row?.['endpoint'], 'chat_completions');
    assert.equal(row?.['cache'], 'off');
    assert.equal(row?.['prompt_preview'], '');
    // each filter matches the row's own value and nothing else
    for (const [filter, hit, miss] of [['model', 'gpt-4o', 'o3'], ['endpoint', 'chat_completions', 'messages'], ['feature', 'summarize', 'extract'], ['cache', 'off', 'hit']]) {
      assert.equal(ids(await call(a, `/api/v1/requests?tenant_id=acme&${filter}=${hit}`, { key: acmeKey }))[0], id, `${filter}=${hit}`);
      assert.ok(!ids(await call(a, `/api/v1/requests?tenant_id=acme&${filter}=${miss}`, { key: acmeKey })).includes(id), `${filter}=${miss}`);
    }
    assert.deepEqual(ids(await call(a, '/api/v1/requests?tenant_id=acme&query_category=code', { key: acmeKey })), [], 'the gateway classifies no query');
    assert.deepEqual(ids(await call(a, '/api/v1/requests?tenant_id=acme&limit=1', { key: acmeKey })), [id]);
    const onB = await call(b, '/api/v1/requests?key_id=key_acmeacmeacmeacmeacme', { key: acmeKey });
    assert.ok(!ids(onB).includes(id), 'another replica holds only its own slice');
    assert.equal((await call(a, `/api/v1/logs/request/${id}?tenant_id=acme`, { key: acmeKey })).status, 200);
    assert.equal((await call(b, `/api/v1/logs/request/${id}?tenant_id=acme`, { key: acmeKey })).status, 404);
  });

  it('the access line says who spent what: key, provider, model, upstream status, tokens, cost and overhead', async () => {
    const [a] = replicas as [TestGateway];
    const id = await chat(a);
    let line: Record<string, unknown> | undefined;
    await eventually(() => {
      line = a.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l['msg'] === 'request' && l['req_id'] === id);
      return line !== undefined;
    }, 'the access line');
    assert.equal(line?.['key_id'], 'key_acmeacmeacmeacmeacme');
    assert.equal(line?.['tenant'], 'acme');
    assert.equal(line?.['provider'], 'openai');
    assert.equal(line?.['model'], 'gpt-4o');
    assert.equal(line?.['upstream_status'], 200);
    assert.ok(Number(line?.['tokens_in']) > 0 && Number(line?.['tokens_out']) > 0);
    assert.ok(Number(line?.['cost_usd']) > 0);
    assert.equal(typeof line?.['overhead_ms'], 'number');
  });

  it('a repeated body from the same key within a minute, or x-stainless-retry-count, marks the row as a retry', async () => {
    const [a, b] = replicas as [TestGateway, TestGateway];
    const first = await chat(a, { 'x-stainless-retry-count': '1' });
    await eventually(async () => (await durable(b, first)).status === 200, 'the row');
    assert.equal(((await durable(b, first)).json['request'] as Record<string, unknown>)['retry'], true);
  });

  it('rows survive a replica restart: what it acknowledged is read by its successor and the others', async () => {
    const a = replicas.shift() as TestGateway;
    const id = await chat(a);
    await a.close();
    const successor = await start();
    replicas.push(successor);
    await eventually(async () => (await durable(successor, id)).status === 200, 'the row on the restarted replica');
    assert.equal((await durable(replicas[0] as TestGateway, id)).status, 200);
  });

  it('scopes every route to the credential\'s tenant', async () => {
    const [a, b] = replicas as [TestGateway, TestGateway];
    const id = await chat(a);
    await eventually(async () => (await durable(b, id)).status === 200, 'the row');
    // another tenant's key: the same 404 as an unknown id, or 403 for naming the other tenant
    assert.equal((await durable(b, id, globexKey)).status, 404);
    assert.ok(!ids(await call(b, '/api/v1/tenant/requests', { key: globexKey })).includes(id));
    assert.equal((await call(b, '/api/v1/tenant/requests?tenant_id=acme', { key: globexKey })).status, 403);
    assert.deepEqual((await call(b, '/api/v1/usage?window=24h', { key: globexKey })).json['data'], []);
    assert.equal((await call(b, '/api/v1/usage?key_id=key_acmeacmeacmeacmeacme', { key: globexKey })).status, 404);
    assert.equal((await call(b, '/api/v1/usage?key_id=key_nosuchkeynosuchkeyno', { key: globexKey })).status, 404);
    assert.equal((await call(a, '/api/v1/requests?tenant_id=acme', { key: globexKey })).status, 403);
    assert.equal((await call(a, '/api/v1/requests?key_id=key_acmeacmeacmeacmeacme', { key: globexKey })).status, 404);
    assert.equal((await call(a, `/api/v1/logs/request/${id}?tenant_id=acme`, { key: globexKey })).status, 403);
    assert.equal((await call(a, `/api/v1/logs/request/${id}?tenant_id=globex`, { key: globexKey })).status, 404);
    assert.equal((await call(a, '/api/v1/tenant/requests')).status, 401);
    // the deployment's config secret must name the tenant
    assert.equal((await call(b, '/api/v1/tenant/requests', { key: CONFIG_SECRET })).status, 400);
    assert.ok(ids(await call(b, '/api/v1/tenant/requests?tenant_id=acme', { key: CONFIG_SECRET })).includes(id));
    assert.equal((await call(b, `/api/v1/tenant/request/${id}?tenant_id=acme`, { key: CONFIG_SECRET })).status, 200);
    assert.equal((await call(a, `/api/v1/logs/request/${id}?tenant_id=acme`, { key: CONFIG_SECRET })).status, 200);
    assert.ok(ids(await call(a, '/api/v1/requests?key_id=key_acmeacmeacmeacmeacme', { key: CONFIG_SECRET })).includes(id));
    // so does the admin key
    assert.ok(ids(await call(b, '/api/v1/tenant/requests?tenant_id=acme', { key: ADMIN_KEY })).includes(id));
    assert.equal((await call(b, '/api/v1/usage?tenant_id=acme&window=1h', { key: ADMIN_KEY })).status, 200);
    assert.equal((await call(a, `/api/v1/logs/request/${id}?tenant_id=acme`, { key: ADMIN_KEY })).status, 200);
    assert.equal((await call(b, '/api/v1/usage', { key: ADMIN_KEY })).status, 400, 'a deployment credential names its tenant');
  });

  it('refuses bad limits, unknown filters and org with 400, naming what is allowed', async () => {
    const [a] = replicas as [TestGateway];
    const cases: Array<[string, RegExp]> = [
      ['/api/v1/requests', /exactly one of key_id and tenant_id/],
      ['/api/v1/requests?tenant_id=acme&key_id=key_acmeacmeacmeacmeacme', /exactly one/],
      ['/api/v1/requests?tenant_id=acme&limit=101', /at most 100/],
      ['/api/v1/tenant/requests?limit=501', /at most 500/],
      ['/api/v1/tenant/requests?prompt=x', /session_id, key_id, model/],
      ['/api/v1/tenant/requests?window=2h', /15m, 1h, 24h, 7d, 30d/],
      ['/api/v1/logs/request/x', /tenant_id: required/],
      ['/api/v1/logs/request/x?tenant_id=acme&limit=2001', /at most 2000/],
      ['/api/v1/usage?org=acme', /org/],
      ['/api/v1/usage?group_by=org', /org/],
      ['/api/v1/usage?group_by=colour', /endpoint, provider/],
      ['/api/v1/usage?bucket=month', /hour, day, week/],
    ];
    for (const [path, message] of cases) {
      const res = await call(a, path, { key: acmeKey });
      assert.equal(res.status, 400, path);
      assert.match(errorMessage(res), message, path);
      assert.equal(res.headers.get('x-gw-error'), 'request_error');
    }
    assert.equal((await call(a, '/api/v1/tenant/request/req-never-seen', { key: acmeKey })).status, 404);
    assert.equal((await call(a, '/api/v1/logs/request/req-never-seen?tenant_id=acme', { key: acmeKey })).status, 404);
  });
});

describe('rows past GW_TELEMETRY_RETENTION_H', () => {
  it('are neither listed nor read, and a tenant gone quiet leaves no stream behind', async () => {
    const fake = await startFakeOpenAI();
    const prefix = newRedisPrefix();
    // 7.2 s: long enough to read the row back first on a loaded machine
    const gw = await startTestGateway({ redisPrefix: prefix, bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin, GW_TELEMETRY_RETENTION_H: '0.002' } });
    const redis = testRedis();
    try {
      const id = await chat(gw);
      await eventually(async () => (await durable(gw, id)).status === 200, 'the row appended');
      const rows = async () => keysMatching(redis, `${prefix}tel:{acme}:rows`);
      assert.equal((await rows()).length, 1);
      // one row is far below a stream node: MINID's approximate trim alone never removes it
      await eventually(
        async () => !ids(await call(gw, '/api/v1/tenant/requests?window=24h', { key: acmeKey })).includes(id) && (await durable(gw, id)).status === 404,
        'the row out of the list and the single read',
        30_000,
      );
      await eventually(async () => (await rows()).length === 0, 'the quiet tenant\'s stream gone', 30_000);
    } finally {
      redis.disconnect();
      await gw.close();
      await fake.close();
      await dropRedisPrefix(prefix);
    }
  });

  it('a retention that is no whole number of milliseconds still keeps rows', async () => {
    const fake = await startFakeOpenAI();
    const prefix = newRedisPrefix();
    // 3,600,000.36 ms: Redis takes expiry times and stream ids in whole milliseconds only
    const gw = await startTestGateway({ redisPrefix: prefix, bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin, GW_TELEMETRY_RETENTION_H: '1.0000001' } });
    try {
      const id = await chat(gw);
      await eventually(async () => (await durable(gw, id)).status === 200, 'the row appended');
    } finally {
      await gw.close();
      await fake.close();
      await dropRedisPrefix(prefix);
    }
  });
});

describe('telemetry while Redis stalls', () => {
  it('requests still answer, and every row they produced is appended once, although its batch reached Redis twice', async () => {
    const fake = await startFakeOpenAI();
    const stalled = await startGatewayBehindProxy(bootstrap, { GW_UPSTREAM_OPENAI: fake.origin });
    // the proxy's Redis, which is always the one node (REDIS_URL)
    const reader = await startTestGateway({ redisPrefix: stalled.prefix, env: { GW_REDIS_URL: REDIS_URL } });
    try {
      const before: number[] = [];
      for (let i = 0; i < 5; i++) before.push((await timedChat(stalled.gw)).ms);
      stalled.proxy.hang();
      const during: string[] = [];
      const ms: number[] = [];
      for (let i = 0; i < 5; i++) {
        const r = await timedChat(stalled.gw, { 'x-gw-project': 'stall' });
        during.push(r.id);
        ms.push(r.ms);
      }
      // reported, not asserted: a wall time on a shared machine is no test
      process.stdout.write(`telemetry with Redis stalled: relay p50 ${median(ms).toFixed(1)} ms (${median(before).toFixed(1)} ms before the stall)\n`);
      // held past the writer's command timeout: the batch is sent again, and both copies reach Redis on resume
      await eventually(async () => /gw_telemetry_append_failures_total [1-9]/.test(await (await fetch(`${stalled.gw.url}/metrics`)).text()), 'a batch retried', 20_000);
      stalled.proxy.resume();
      await eventually(async () => {
        const usage = await call(reader, '/api/v1/usage?window=1h&group_by=project&project=stall', { key: acmeKey });
        return (usage.json['data'] as Array<{ requests: number }>)[0]?.requests === during.length;
      }, 'the stalled rows summed once each');
      for (const id of during) assert.equal((await durable(reader, id)).status, 200, id);
      const usage24 = await call(reader, '/api/v1/usage?window=24h&group_by=project&project=stall', { key: acmeKey });
      assert.equal((usage24.json['data'] as Array<{ requests: number }>)[0]?.requests, during.length, 'the hourly rollup counts each row once');
    } finally {
      await reader.close();
      await stalled.close();
      await fake.close();
    }
  });
});

/** a gauge or counter of the gateway's /metrics */
const metric = async (gw: TestGateway, name: string): Promise<number> => {
  const line = (await (await fetch(`${gw.url}/metrics`)).text()).split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1]);
};

describe('a telemetry read Redis does not answer in time', () => {
  it('is 504 store_timeout with Retry-After: 5, the remedy in the message and x-gw-stage-durations naming the read as running', async () => {
    const stalled = await startGatewayBehindProxy(bootstrap, { GW_TELEMETRY_READ_TIMEOUT_S: '0.3' });
    try {
      stalled.proxy.hang();
      const cases: Array<[string, RegExp]> = [
        ['/api/v1/usage?window=7d', /shorter window or fewer dimensions/],
        ['/api/v1/tenant/requests', /narrower window or more filters/],
        ['/api/v1/tenant/request/req-x', /retry shortly/],
      ];
      for (const [path, remedy] of cases) {
        const res = await call(stalled.gw, path, { key: acmeKey });
        assert.equal(res.status, 504, path);
        assert.equal(res.headers.get('x-gw-error'), 'store_timeout', path);
        assert.equal(res.headers.get('retry-after'), '5', path);
        assert.match(errorMessage(res), remedy, path);
        assert.match(res.headers.get('x-gw-stage-durations') ?? '', /(^|, )store_read;dur=[\d.]+;running$/, path);
      }
    } finally {
      await stalled.close();
    }
  });
});

describe('telemetry while Redis is away', () => {
  it('rows wait in the bounded buffer and are appended once Redis is back; the overflow is counted and logged once, never per request', async () => {
    const BUFFER = 4;
    const fake = await startFakeOpenAI();
    const redis = await privateRedis();
    const gw = await startTestGateway({
      bootstrap,
      env: { GW_UPSTREAM_OPENAI: fake.origin, GW_REDIS_URL: redis.url, GW_SECRETS_KEY: SECRETS_KEY, GW_WORKERS: '1', GW_TELEMETRY_BUFFER_ROWS: String(BUFFER) },
    });
    try {
      await redis.stop();
      const during: string[] = [];
      const ms: number[] = [];
      for (let i = 0; i < BUFFER + 3; i++) {
        const r = await timedChat(gw, { 'x-gw-project': 'outage' });
        during.push(r.id);
        ms.push(r.ms);
      }
      process.stdout.write(`telemetry with Redis away: relay p50 ${median(ms).toFixed(1)} ms\n`);
      assert.equal(await metric(gw, 'gw_telemetry_rows_buffered'), BUFFER, 'the buffer is full, the requests answered');
      assert.equal(await metric(gw, 'gw_telemetry_rows_dropped_total'), 3);
      const dropLines = () => gw.logs.filter((l) => l.includes('telemetry rows dropped'));
      assert.equal(dropLines().length, 1, 'one line for the first drop; the rest are held for the next interval');

      await redis.restart();
      const kept = during.slice(0, BUFFER);
      await eventually(async () => (await metric(gw, 'gw_telemetry_rows_buffered')) === 0, 'the buffered rows appended');
      for (const id of kept) assert.equal((await durable(gw, id)).status, 200, id);
      for (const id of during.slice(BUFFER)) assert.equal((await durable(gw, id)).status, 404, `${id} was dropped`);
      const usage = await call(gw, '/api/v1/usage?window=1h&group_by=project&project=outage', { key: acmeKey });
      assert.equal((usage.json['data'] as Array<{ requests: number }>)[0]?.requests, BUFFER);
    } finally {
      await gw.close();
      await redis.stop();
      await fake.close();
    }
  });
});

describe('telemetry without Redis', () => {
  let gw: TestGateway;
  let fake: FakeVendor;
  before(async () => {
    fake = await startFakeOpenAI();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin } });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  it('usage and the durable routes answer 501; the inspector still works', async () => {
    for (const path of ['/api/v1/usage', '/api/v1/tenant/requests', '/api/v1/tenant/request/x']) {
      const res = await call(gw, path, { key: acmeKey });
      assert.equal(res.status, 501, path);
    }
    const id = await chat(gw);
    assert.ok(ids(await call(gw, '/api/v1/requests?tenant_id=acme', { key: acmeKey })).includes(id));
  });
});
