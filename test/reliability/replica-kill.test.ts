import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { redisKeys } from '../../src/stores/redis/prefixes.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai.js';
import { bootstrapFile, dropRedisPrefix, newRedisPrefix, oneTenant, REDIS_URL, requireRedis, SECRETS_KEY } from '../helpers/gateway.js';
import { spawnGateway, stopGateway, type GatewayProcess } from '../helpers/gateway-process.js';
import { eventually } from '../helpers/wait.js';

/**
 * A replica killed (SIGKILL) while it relays a stream, with a second replica
 * of the same deployment beside it: the caller sees the stream cut (no
 * `[DONE]`, the chunked body unterminated, so its client raises an error
 * rather than ending cleanly), retries on the other replica and is served;
 * the killed call's spend-cap reservation is held until its lease lapses and
 * is then given back, never settled, so the tenant is charged once, for the
 * retry (docs/operations.md, When something fails).
 *
 * A lease lapses 60 s after its replica last renewed it. Rather than wait a
 * minute, the test checks the lease lapses within that bound, then moves its
 * lapse time into the past, as the minute without renewal would.
 */
const ORG = 'killed';
const { bootstrap, devKey } = oneTenant(ORG);
const LEASE_MS = 60_000;
const body = JSON.stringify({ model: 'stall_once_stream', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] });

const post = (port: number, path: string, payload: string) =>
  fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${devKey}`, 'x-gw-provider-key': 'sk-test' }, body: payload });

async function consumedUsd(port: number): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/settings`, { headers: { authorization: `Bearer ${devKey}` } });
  return ((await res.json()) as { spend_cap: { consumed_usd: number } }).spend_cap.consumed_usd;
}

describe('a replica killed mid-stream', () => {
  const prefix = newRedisPrefix();
  const keys = redisKeys(prefix);
  const account = `${ORG}:month`;
  let fake: FakeOpenAI;
  let a: GatewayProcess;
  let b: GatewayProcess;
  let redis: Redis;

  before(async () => {
    await requireRedis();
    redis = new Redis(REDIS_URL);
    fake = await startFakeOpenAI();
    const env = { GW_REDIS_URL: REDIS_URL, GW_REDIS_PREFIX: prefix, GW_SECRETS_KEY: SECRETS_KEY, GW_WORKERS: '1', GW_UPSTREAM_OPENAI: fake.origin, GW_LOG_LEVEL: 'info' };
    a = await spawnGateway({ ...env, GW_BOOTSTRAP: await bootstrapFile(bootstrap) });
    b = await spawnGateway(env);
    const cap = await post(a.port, '/api/v1/spend_cap/update', JSON.stringify({ cap_usd: 10_000 }));
    assert.equal(cap.status, 200, await cap.text());
  });
  after(async () => {
    for (const gw of [a, b]) if (gw) await stopGateway(gw);
    await fake?.close();
    redis?.disconnect();
    await dropRedisPrefix(prefix);
  });

  it('the caller sees the stream cut, the other replica serves the retry, and the killed call is never charged', async () => {
    const first = await post(a.port, '/v1/chat/completions', body);
    assert.equal(first.status, 200);
    const reader = (first.body as ReadableStream<Uint8Array>).getReader();
    const opening = await reader.read();
    assert.match(Buffer.from(opening.value ?? []).toString(), /^data: \{.*"chat\.completion\.chunk"/);

    // the call in flight holds its reservation under a lease that lapses within a minute unless renewed
    const leases = await redis.zrange(keys.meterLeases(account), '0', '-1', 'WITHSCORES');
    assert.equal(leases.length, 2, 'the streaming call holds one reservation');
    const [leased, lapsesAt] = [leases[0] as string, Number(leases[1])];
    const [seconds, micros] = (await redis.time()) as [number | string, number | string];
    const nowMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    assert.ok(lapsesAt <= nowMs + LEASE_MS, `the lease lapses ${lapsesAt - nowMs} ms from now`);
    const reserved = Number(await redis.hget(keys.meterSpend(account), 'reserved'));
    assert.ok(reserved > 0);

    a.child.kill('SIGKILL');
    await a.exited;
    let rest = '';
    const cut = await (async () => {
      for (;;) {
        const r = await reader.read();
        if (r.done) return undefined;
        rest += Buffer.from(r.value).toString();
      }
    })().catch((err: unknown) => err);
    assert.ok(cut instanceof Error, 'the client raised an error: the stream ended without its terminating chunk');
    assert.doesNotMatch(rest, /\[DONE\]/);

    // nothing released the killed call's reservation; a minute without renewal lapses it
    assert.equal(Number(await redis.hget(keys.meterSpend(account), 'reserved')), reserved);
    await redis.zadd(keys.meterLeases(account), nowMs - 1, leased);

    const retry = await post(b.port, '/v1/chat/completions', body);
    assert.equal(retry.status, 200);
    const text = await retry.text();
    assert.ok(text.endsWith('data: [DONE]\n\n'), 'the retry streamed whole');
    assert.equal(fake.received.filter((r) => r.url.startsWith('/v1/chat/completions')).length, 2, 'each attempt reached the vendor once');

    const id = retry.headers.get('x-gw-request-id');
    let retryCost = 0;
    await eventually(() => {
      const line = b.lines.find((l) => l.includes(`"req_id":"${id}"`) && l.includes('"msg":"request"'));
      retryCost = line ? (JSON.parse(line) as { cost_usd: number }).cost_usd : 0;
      return retryCost > 0;
    }, "the retry's access line with its cost");
    await eventually(async () => Math.abs((await consumedUsd(b.port)) - retryCost) < 1e-9, 'the retry settled');
    assert.ok(Math.abs((await consumedUsd(b.port)) - retryCost) < 1e-9, 'consumption is the retry alone');
    assert.equal(Number(await redis.hget(keys.meterSpend(account), 'reserved')), 0, "the killed call's reservation was given back");
    assert.equal(await redis.zcard(keys.meterLeases(account)), 0);
  });
});
