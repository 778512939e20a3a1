import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startFakeOpenAI } from '../fakes/openai.js';
import type { FakeVendor } from '../fakes/server.js';
import { ADMIN_KEY, dropRedisPrefix, newRedisPrefix, SECRETS_KEY, TEST_REDIS_ENV } from '../helpers/gateway.js';
import { envWithoutGw, MAIN, spawnGateway, stopGateway, type GatewayProcess } from '../helpers/gateway-process.js';

/** A gateway expected not to start: its exit code and stderr, or `listened` when it served after all (then it is stopped). */
async function spawnRefused(env: Record<string, string>): Promise<{ code: number | null; stderr: string; listened: boolean }> {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
    env: { ...envWithoutGw(), GW_HOST: '127.0.0.1', GW_ADMIN_KEY: ADMIN_KEY, GW_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let listened = false;
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout?.on('data', (d: Buffer) => {
    if (!listened && d.toString().includes('"msg":"gateway listening"')) {
      listened = true;
      child.kill('SIGTERM');
    }
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stderr, listened };
}

/** One request on a fresh connection (so SO_REUSEPORT may pick any replica). */
function send(port: number, method: string, path: string, headers: Record<string, string> = {}, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request({ host: '127.0.0.1', port, method, path, agent: false, headers: { ...(payload ? { 'content-type': 'application/json' } : {}), ...headers } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const admin = (port: number, path: string, body: unknown) => send(port, 'POST', path, { authorization: `Bearer ${ADMIN_KEY}` }, body);
const chat = (port: number, devKey: string) =>
  send(port, 'POST', '/v1/chat/completions', { authorization: `Bearer ${devKey}`, 'x-gw-provider-key': 'sk-upstream-test' }, { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });

describe('two gateway processes on one Redis', () => {
  const prefix = newRedisPrefix();
  let fake: FakeVendor;
  let a: GatewayProcess;
  let b: GatewayProcess;

  before(async () => {
    fake = await startFakeOpenAI();
    const env = { ...TEST_REDIS_ENV, GW_REDIS_PREFIX: prefix, GW_SECRETS_KEY: SECRETS_KEY, GW_WORKERS: '1', GW_UPSTREAM_OPENAI: fake.origin, GW_LOG_LEVEL: 'info' };
    [a, b] = await Promise.all([spawnGateway(env), spawnGateway(env)]);
  });
  after(async () => {
    await Promise.all([a, b].filter(Boolean).map(stopGateway));
    await fake.close();
    await dropRedisPrefix(prefix);
  });

  it('an org and key created through A are obeyed by B on the very next request; so is the revocation', async () => {
    for (let i = 0; i < 10; i++) {
      const org = `replica-org-${i}`;
      assert.equal((await admin(a.port, '/api/v1/admin/orgs', { org_id: org, rps_cap: 1000 })).status, 201);
      // the key is minted through B for an org B only heard of from A
      const minted = await admin(b.port, '/api/v1/admin/dev_keys', { org_id: org });
      assert.equal(minted.status, 201, JSON.stringify(minted.body));
      const devKey = minted.body['api_key'] as string;
      assert.equal((await chat(a.port, devKey)).status, 200, `round ${i}: A does not know B's key yet`);
      const revoked = await admin(a.port, '/api/v1/admin/dev_keys/revoke', { key_id: minted.body['key_id'] });
      assert.equal(revoked.status, 200);
      const next = await chat(b.port, devKey);
      assert.equal(next.status, 401, `round ${i}: B still accepts a key A revoked`);
      assert.equal((next.body['error'] as { type: string }).type, 'invalid_developer_key');
    }
  });

  it('a revocation through A is answered only once B has applied it: B stopped (SIGSTOP) holds the answer until it runs again', async () => {
    const org = 'replica-org-stopped';
    assert.equal((await admin(a.port, '/api/v1/admin/orgs', { org_id: org, rps_cap: 1000 })).status, 201);
    const minted = await admin(a.port, '/api/v1/admin/dev_keys', { org_id: org });
    const devKey = minted.body['api_key'] as string;
    assert.equal((await chat(b.port, devKey)).status, 200, 'B knows the key');
    const pid = b.child.pid as number;
    process.kill(pid, 'SIGSTOP');
    let resumed = false;
    let answeredWhileStopped = false;
    try {
      const revoke = admin(a.port, '/api/v1/admin/dev_keys/revoke', { key_id: minted.body['key_id'] }).then((r) => {
        answeredWhileStopped = !resumed;
        return r;
      });
      // B cannot read the change while stopped; A must not answer before B could
      await new Promise((r) => setTimeout(r, 300));
      resumed = true;
      process.kill(pid, 'SIGCONT');
      assert.equal((await revoke).status, 200);
    } finally {
      if (!resumed) process.kill(pid, 'SIGCONT');
    }
    assert.equal(answeredWhileStopped, false, 'A answered the revocation while B had not applied it');
    assert.equal((await chat(b.port, devKey)).status, 401);
  });

  it('an org created on both at once is created once: one 201, the other 200', async () => {
    const [ra, rb] = await Promise.all([admin(a.port, '/api/v1/admin/orgs', { org_id: 'both-at-once' }), admin(b.port, '/api/v1/admin/orgs', { org_id: 'both-at-once' })]);
    assert.deepEqual([ra.status, rb.status].sort(), [200, 201]);
    assert.equal(ra.body['created_at'], rb.body['created_at']);
  });
});

describe('GW_WORKERS=2: replica processes sharing one port', () => {
  const prefix = newRedisPrefix();
  let gw: GatewayProcess;

  before(async () => {
    gw = await spawnGateway({ GW_WORKERS: '2', ...TEST_REDIS_ENV, GW_REDIS_PREFIX: prefix, GW_SECRETS_KEY: SECRETS_KEY, GW_LOG_LEVEL: 'info' });
  });
  after(async () => {
    await stopGateway(gw);
    await dropRedisPrefix(prefix);
  });

  const pidsAnswering = async (want: number, timeoutMs = 20_000): Promise<Set<number>> => {
    const pids = new Set<number>();
    const deadline = Date.now() + timeoutMs;
    while (pids.size < want && Date.now() < deadline) {
      const r = await send(gw.port, 'GET', '/healthz').catch(() => undefined);
      if (r?.status === 200) pids.add(r.body['pid'] as number);
      else await new Promise((res) => setTimeout(res, 50));
    }
    return pids;
  };

  it('both replicas answer on the one port, and a replica that dies is replaced', async () => {
    const pids = await pidsAnswering(2);
    assert.equal(pids.size, 2, `one port, two replicas: saw ${[...pids].join(', ')}`);
    assert.ok(!pids.has(gw.child.pid ?? -1), 'the primary serves nothing itself');
    const [victim] = [...pids];
    process.kill(victim!, 'SIGKILL');
    const deadline = Date.now() + 30_000;
    let replacement: number | undefined;
    while (replacement === undefined && Date.now() < deadline) {
      for (const pid of await pidsAnswering(2, 2000)) if (!pids.has(pid)) replacement = pid;
    }
    assert.ok(replacement, 'no replacement replica answered');
    assert.ok(gw.lines.some((l) => l.includes('"msg":"replica exited; restarting in 1 s"') && l.includes('"signal":"SIGKILL"')));
  });

  it('a second gateway started on the replicas\' port refuses it, naming the port', async () => {
    for (const workers of ['1', '2']) {
      const second = await spawnRefused({ GW_PORT: String(gw.port), GW_WORKERS: workers, ...TEST_REDIS_ENV, GW_REDIS_PREFIX: newRedisPrefix(), GW_SECRETS_KEY: SECRETS_KEY });
      assert.equal(second.listened, false, `GW_WORKERS=${workers}: a second gateway served the port`);
      assert.notEqual(second.code, 0, `GW_WORKERS=${workers}`);
      assert.match(second.stderr, new RegExp(`port ${gw.port} is held by another process`), `GW_WORKERS=${workers}`);
    }
    assert.equal((await pidsAnswering(2)).size, 2, 'the replicas still serve the port');
  });

  it('SIGTERM to the primary stops every replica', async () => {
    const pids = await pidsAnswering(2);
    gw.child.kill('SIGTERM');
    assert.equal(await gw.exited, 0);
    for (const pid of pids) assert.throws(() => process.kill(pid, 0), /ESRCH/, `replica ${pid} outlived the primary`);
  });
});

describe('a second gateway on a port already in use', () => {
  let first: GatewayProcess;
  before(async () => {
    first = await spawnGateway({});
  });
  after(() => stopGateway(first));

  it('refuses a port another gateway holds, naming the port', async () => {
    const second = await spawnRefused({ GW_PORT: String(first.port) });
    assert.equal(second.listened, false, 'a second gateway served the port');
    assert.notEqual(second.code, 0);
    assert.match(second.stderr, new RegExp(`port ${first.port} is held by another process`));
    const res = await send(first.port, 'GET', '/healthz');
    assert.equal(res.body['pid'], first.child.pid, 'the first gateway alone answers on its port');
  });
});

describe('GW_WORKERS=2 with Redis unreachable', () => {
  it('stops with an error naming GW_REDIS_URL instead of restarting replicas forever', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
      env: { ...envWithoutGw(), GW_HOST: '127.0.0.1', GW_PORT: '0', GW_WORKERS: '2', GW_REDIS_URL: 'redis://127.0.0.1:1', GW_SECRETS_KEY: SECRETS_KEY, GW_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
    const [code] = await once(child, 'exit');
    assert.equal(code, 1);
    assert.match(err, /GW_REDIS_URL: cannot use Redis at redis:\/\/127\.0\.0\.1:1/);
    assert.match(err, /could not start/);
  });
});

describe('GW_WORKERS=2 with GW_METRICS_PORT: one scrape covers every replica', () => {
  const prefix = newRedisPrefix();
  let gw: GatewayProcess;
  let metricsPort: number;

  before(async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    metricsPort = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    gw = await spawnGateway({ GW_WORKERS: '2', GW_METRICS_PORT: String(metricsPort), ...TEST_REDIS_ENV, GW_REDIS_PREFIX: prefix, GW_SECRETS_KEY: SECRETS_KEY, GW_LOG_LEVEL: 'info' });
  });
  after(async () => {
    await stopGateway(gw);
    await dropRedisPrefix(prefix);
  });

  it('sums the replicas\' counters: the total equals the requests sent, though two replicas served them', async () => {
    const pids = new Set<number>();
    let sent = 0;
    const deadline = Date.now() + 20_000;
    // both replicas must be up and have served some of the calls
    while ((pids.size < 2 || sent < 20) && Date.now() < deadline) {
      const r = await send(gw.port, 'GET', '/healthz').catch(() => undefined);
      if (r === undefined) continue;
      sent++;
      if (r.status === 200) pids.add(r.body['pid'] as number);
    }
    assert.equal(pids.size, 2, 'both replicas answered');
    const text = await new Promise<string>((resolve, reject) => {
      request({ host: '127.0.0.1', port: metricsPort, path: '/metrics', agent: false }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve(body));
      })
        .on('error', reject)
        .end();
    });
    const line = text.split('\n').find((l) => l.startsWith('gw_requests_total{') && l.includes('surface="public"') && l.includes('status="200"'));
    assert.ok(line, 'the aggregated scrape has the public-surface counter');
    assert.equal(Number(line.split(' ').pop()), sent);
  });
});
