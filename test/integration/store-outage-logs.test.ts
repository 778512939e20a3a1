import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFakeOpenAI } from '../fakes/openai.js';
import type { FakeVendor } from '../fakes/server.js';
import { call } from '../helpers/api.js';
import { oneTenant } from '../helpers/gateway.js';
import { startGatewayBehindProxy } from '../helpers/redis-proxy.js';
import { eventually } from '../helpers/wait.js';
import { THROTTLE_INTERVAL_MS } from '../../src/telemetry/throttled-log.js';

const REQUESTS = 200;

/**
 * While Redis does not answer, every capped call fails its reservation open
 * and could log its own warning: the log must stay readable (one line per
 * interval, with the count of the ones held back), not one line per request.
 */
describe('warnings during a Redis stall are rate-limited', () => {
  let fake: FakeVendor;
  let behind: Awaited<ReturnType<typeof startGatewayBehindProxy>>;
  const { bootstrap, devKey } = oneTenant('acme');

  before(async () => {
    fake = await startFakeOpenAI();
    behind = await startGatewayBehindProxy(bootstrap, { GW_UPSTREAM_OPENAI: fake.origin });
    assert.equal((await call(behind.gw, '/api/v1/spend_cap/update', { key: devKey, body: { cap_usd: 1000 } })).status, 200);
  });
  after(async () => {
    await behind.close();
    await fake.close();
  });

  const warnLines = () =>
    behind.gw.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['level'] === 40 && String(l['msg']).startsWith('spend cap: metering store unreachable'));

  it(`${REQUESTS} relayed calls with Redis stalled: every one answered, one warning line plus one carrying the count of the rest`, async () => {
    behind.proxy.hang();
    const body = JSON.stringify({ model: 'gpt-4o', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
    const answers = await Promise.all(
      Array.from({ length: REQUESTS }, () =>
        fetch(`${behind.gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${devKey}`, 'x-gw-provider-key': 'sk-upstream' },
          body,
        }).then(async (r) => {
          await r.arrayBuffer();
          return r.status;
        }),
      ),
    );
    assert.deepEqual(new Set(answers), new Set([200]), 'fail-open: the stall refuses nothing');
    assert.equal(warnLines().length, 1, 'the first failure is logged at once, the rest held back');
    // the held-back ones are reported in one line once the interval ends
    await eventually(() => warnLines().length === 2, 'the line with the count', THROTTLE_INTERVAL_MS * 2);
    const lines = warnLines();
    assert.equal(lines[0]?.['suppressed'], undefined);
    assert.equal(1 + Number(lines[1]?.['suppressed']), REQUESTS, 'every failed reservation is counted');
    const allWarns = behind.gw.logs.filter((l) => l.includes('"level":40'));
    assert.ok(allWarns.length <= 6, `a few warn lines in all, not one per request: ${allWarns.length}`);
  });
});
