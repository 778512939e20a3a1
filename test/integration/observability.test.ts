import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { createLogger } from '../../src/telemetry/log.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai.js';
import { oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually, freePort } from '../helpers/wait.js';

const PASS_THROUGH = 'sk-passthrough-canary-7f3a9c';

/** the value of one sample line of a Prometheus text exposition */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const labelText = /\{(.*)\}/.exec(line)?.[1] ?? '';
    if (Object.entries(labels).every(([k, v]) => labelText.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

describe('log redaction', () => {
  it('censors every credential header and api_key field, nested too', async () => {
    const lines: string[] = [];
    const log = createLogger('info', new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) }));
    const headers = {
      authorization: 'Bearer sk-h1',
      'x-api-key': 'sk-h2',
      'api-key': 'sk-h3',
      'x-goog-api-key': 'sk-h4',
      'x-gw-key': 'gw_h5',
      'x-gw-provider-key': 'sk-h6',
      'x-gw-admin-key': 'adm-h7',
      'x-gw-config-secret': 'cfg-h8',
      cookie: 'sess-h9',
      'proxy-authorization': 'Basic h10',
      'content-type': 'application/json',
    };
    log.info({ headers, api_key: 'sk-f1', body: { api_key: 'sk-f2' }, req: { headers, body: { api_key: 'sk-f3' } } }, 'probe');
    log.child({ req_id: 'r1' }).warn({ upstream: { headers } }, 'child probe');
    log.flush();
    await eventually(() => lines.join('').includes('child probe'), 'both lines');
    const text = lines.join('');
    assert.ok(text.includes('probe') && text.includes('child probe'), text);
    for (const secret of ['sk-h', 'gw_h5', 'adm-h7', 'cfg-h8', 'sess-h9', 'Basic h10', 'sk-f']) assert.equal(text.includes(secret), false, `${secret} leaked: ${text}`);
    assert.ok(text.includes('application/json'), 'non-credential headers stay');
    assert.ok(text.includes('"req_id":"r1"'));
  });
});

describe('observability through the running gateway', () => {
  let fake: FakeOpenAI;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('obs');

  before(async () => {
    fake = await startFakeOpenAI();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin, GW_LOG_LEVEL: 'debug' } });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  const client = () => new OpenAI({ apiKey: devKey, baseURL: `${gw.url}/v1`, defaultHeaders: { 'x-gw-provider-key': PASS_THROUGH }, maxRetries: 0 });

  it('logs one access line per request carrying its request id, and no key of any kind', async () => {
    const { data, response } = await client().chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    assert.ok(data.id);
    const id = response.headers.get('x-gw-request-id');
    await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${PASS_THROUGH}`, 'x-gw-key': devKey }, body: '{"model":"error_401","messages":[]}' });
    await fetch(`${gw.url}/api/v1/vendor_key/create`, {
      method: 'POST',
      headers: { authorization: `Bearer ${devKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'openai', api_key: 'sk-stored-canary-55e1' }),
    });
    const accessLines = () => gw.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['msg'] === 'request' && l['req_id'] === id);
    await eventually(() => accessLines().length > 0, 'the access line');
    const access = accessLines();
    assert.equal(access.length, 1, 'one access line for the call');
    assert.equal(access[0]?.['status'], 200);
    assert.equal(access[0]?.['provider'], 'openai');
    const all = gw.logs.join('\n');
    for (const secret of [PASS_THROUGH, devKey, devKey.slice(3), 'sk-stored-canary-55e1']) assert.equal(all.includes(secret), false, `${secret} is in the logs`);
  });

  it('GET /metrics shows requests by surface/status/provider, latency histograms, in-flight, loop delay, pools, usage and cost', async () => {
    const stream = await client().chat.completions.create({ model: 'gpt-4o', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] });
    for await (const _ of stream) void _;
    await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', body: '{}' });
    await fetch(`${gw.url}/no/such/path`);
    const res = await fetch(`${gw.url}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/plain/);
    const text = await res.text();

    assert.ok((sample(text, 'gw_requests_total', { surface: 'chat_completions', status: '200', provider: 'openai' }) ?? 0) >= 2, 'successful chat calls');
    assert.ok((sample(text, 'gw_requests_total', { surface: 'chat_completions', status: '401', provider: 'none' }) ?? 0) >= 1, 'refused chat calls');
    assert.ok((sample(text, 'gw_requests_total', { surface: 'public', status: '404' }) ?? 0) >= 1, 'unmatched paths');
    assert.ok((sample(text, 'gw_gateway_overhead_seconds_count', { surface: 'chat_completions' }) ?? 0) >= 2, 'overhead histogram');
    assert.ok((sample(text, 'gw_upstream_latency_seconds_count', { provider: 'openai' }) ?? 0) >= 2, 'upstream latency histogram');
    assert.ok((sample(text, 'gw_request_duration_seconds_bucket', { surface: 'chat_completions', le: '+Inf' }) ?? 0) >= 2);
    assert.equal(sample(text, 'gw_in_flight_requests'), 1, 'the scrape itself is the one request in flight');
    assert.notEqual(sample(text, 'gw_event_loop_delay_p99_seconds'), undefined);
    assert.ok((sample(text, 'gw_upstream_pool_connected', { origin: fake.origin }) ?? -1) >= 0, 'pool stats per upstream origin');

    // the buffered call (12 in, 2 cached, 5 out) and the stream's final usage chunk (12 in, 4 out), priced as gpt-4o
    assert.equal(sample(text, 'gw_tokens_total', { provider: 'openai', kind: 'input' }), 24);
    assert.equal(sample(text, 'gw_tokens_total', { provider: 'openai', kind: 'output' }), 9);
    assert.equal(sample(text, 'gw_tokens_total', { provider: 'openai', kind: 'cached' }), 2);
    const expected = (10 * 2.5 + 2 * 1.25 + 5 * 10 + 12 * 2.5 + 4 * 10) / 1e6;
    assert.ok(Math.abs((sample(text, 'gw_cost_usd_total', { provider: 'openai' }) ?? 0) - expected) < 1e-12, text.split('\n').find((l) => l.startsWith('gw_cost')));
  });
});

describe('every gateway error is logged once, at its type\'s level', () => {
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('obs-errors');

  before(async () => {
    // nothing listens there: every call is refused at connect
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_OPENAI: `http://127.0.0.1:${await freePort()}` } });
  });
  after(() => gw.close());

  /** the lines of one request other than its access line, once the access line is out */
  const errorLines = async (id: string) => {
    const parsed = () => gw.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['req_id'] === id);
    await eventually(() => parsed().some((l) => l['msg'] === 'request'), 'the access line');
    return parsed().filter((l) => l['msg'] !== 'request');
  };
  const chat = (headers: Record<string, string>) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gw-provider-key': PASS_THROUGH, ...headers },
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
    });

  it('an upstream connection refused, answered 502 upstream_unavailable, logs one warn line with its cause', async () => {
    const res = await chat({ authorization: `Bearer ${devKey}` });
    assert.equal(res.status, 502);
    await res.arrayBuffer();
    const lines = await errorLines(res.headers.get('x-gw-request-id') ?? '');
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.equal(lines[0]?.['level'], 40);
    assert.equal(lines[0]?.['type'], 'upstream_unavailable');
    assert.equal(lines[0]?.['status'], 502);
    assert.ok(lines[0]?.['err'], 'the cause is logged');
    assert.equal(JSON.stringify(lines).includes(PASS_THROUGH), false);
  });

  it('a refused key and a missing route each log one line at their level', async () => {
    for (const [res, type, level] of [
      [await chat({ authorization: 'Bearer gw_not-a-key' }), 'invalid_developer_key', 30],
      [await fetch(`${gw.url}/no/such/route`), 'not_found', 30],
    ] as const) {
      await res.arrayBuffer();
      const lines = await errorLines(res.headers.get('x-gw-request-id') ?? '');
      assert.deepEqual(lines.map((l) => [l['type'], l['level']]), [[type, level]]);
    }
  });
});

describe('GW_METRICS_PORT and GW_METRICS_PUBLIC=0', () => {
  let gw: TestGateway;
  let metricsPort: number;

  before(async () => {
    metricsPort = await freePort();
    gw = await startTestGateway({ env: { GW_METRICS_PORT: String(metricsPort), GW_METRICS_PUBLIC: '0' } });
  });
  after(async () => {
    await gw.close();
  });

  it('serves metrics on the metrics port and not on the main one', async () => {
    assert.equal(gw.gateway.metricsPort, metricsPort);
    await fetch(`${gw.url}/healthz`);
    const main = await fetch(`${gw.url}/metrics`);
    assert.equal(main.status, 404);
    await main.text();
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.ok((sample(text, 'gw_requests_total', { surface: 'public', status: '200' }) ?? 0) >= 1, 'the main port\'s requests are counted');
    const other = await fetch(`http://127.0.0.1:${metricsPort}/healthz`);
    assert.equal(other.status, 404, 'the metrics port serves nothing else');
  });
});

describe('gateway overhead of a stream excludes the stream itself', () => {
  let fake: FakeOpenAI;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('obs-stream');

  before(async () => {
    fake = await startFakeOpenAI();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin, GW_STREAM_IDLE_S: '1' } });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  it('records the time before dispatch, not the second the stream stayed open', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gw-key': devKey, 'x-gw-provider-key': PASS_THROUGH },
      body: JSON.stringify({ model: 'stall_stream', stream: true, messages: [] }),
    });
    await res.text();
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    assert.equal(sample(text, 'gw_gateway_overhead_seconds_count', { surface: 'chat_completions' }), 1);
    const overhead = sample(text, 'gw_gateway_overhead_seconds_sum', { surface: 'chat_completions' }) ?? Infinity;
    const duration = sample(text, 'gw_request_duration_seconds_sum', { surface: 'chat_completions' }) ?? 0;
    assert.ok(duration >= 0.9, `the stream stayed open until the idle timeout (${duration} s)`);
    assert.ok(overhead < duration / 2, `overhead ${overhead} s counts the stream's ${duration} s`);
  });
});
