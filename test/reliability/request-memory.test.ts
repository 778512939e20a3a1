import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { startFakeAnthropic } from '../fakes/anthropic.js';
import type { FakeVendor } from '../fakes/server.js';
import { bootstrapFile, oneTenant } from '../helpers/gateway.js';
import { spawnGateway, stopGateway, type GatewayProcess } from '../helpers/gateway-process.js';

/**
 * The memory one large translated request costs, measured on a gateway
 * process of its own: its peak resident set (VmHWM, reset through
 * /proc/<pid>/clear_refs just before the request) against its resident set
 * before. The rule is Envoy's: no request may cost more than 10× its size.
 * The body is a 30 MB chat of 545k short messages translated to the Messages
 * format, the shape that cost 20× when a conversation was translated as an
 * object tree and then serialised.
 *
 * The skill stages are given no time (GW_SKILL_CEILING_*_MS=0, so the call is
 * relayed as a passthrough, still translated): their pool threads read the body
 * in memory of their own, measured apart (docs/operations.md, Memory per
 * request). Everything else a call does is in the figure: the body's upload,
 * its parse, the translation, the relay and the accounting.
 */
const MESSAGES = 545_000;
const RULE = 10;
const { bootstrap, devKey } = oneTenant('memory');

/** a /proc/<pid>/status figure in bytes */
const procStatus = (pid: number, field: 'VmRSS' | 'VmHWM'): number => {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  return Number(/(\d+) kB/.exec(line ?? '')?.[1]) * 1024;
};

/** whether this system lets a process's peak resident set be reset (Linux 4.0 and later) */
function canResetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

describe('memory of one large translated request', () => {
  let fake: FakeVendor;
  let gw: GatewayProcess;
  before(async () => {
    fake = await startFakeAnthropic();
    gw = await spawnGateway({
      GW_BOOTSTRAP: await bootstrapFile(bootstrap),
      GW_UPSTREAM_MSGVENDOR: fake.origin,
      GW_SKILL_CEILING_ACTING_MS: '0',
      GW_SKILL_CEILING_SHADOW_MS: '0',
      GW_LOG_LEVEL: 'info',
    });
  });
  after(async () => {
    await stopGateway(gw);
    await fake.close();
  });

  const chat = (messages: unknown[]) =>
    fetch(`http://127.0.0.1:${gw.port}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gw-key': devKey, 'x-gw-provider-key': 'sk-test' },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 5, messages }),
    });

  it(`a 30 MB chat body translated to another vendor costs under ${RULE}× its size`, async (t) => {
    const pid = gw.child.pid as number;
    if (!canResetPeak(pid)) return t.skip('/proc/<pid>/clear_refs cannot reset the peak resident set here');
    const warm = await chat([{ role: 'user', content: 'warm up' }]);
    assert.equal(warm.status, 200);
    await warm.arrayBuffer();
    const messages = Array.from({ length: MESSAGES }, (_, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: 'hello there, how are you' }));
    const bytes = Buffer.byteLength(JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 5, messages }));
    canResetPeak(pid);
    const rssBefore = procStatus(pid, 'VmRSS');
    const res = await chat(messages);
    assert.equal(res.status, 200, await res.clone().text());
    await res.arrayBuffer();
    const growth = procStatus(pid, 'VmHWM') - rssBefore;
    const sent = JSON.parse(String(fake.received.at(-1)?.body)) as { messages: unknown[] };
    assert.equal(sent.messages.length, MESSAGES, 'the vendor got every turn');
    process.stdout.write(`translated ${(bytes / 1e6).toFixed(1)} MB body (${MESSAGES} messages): peak RSS growth ${(growth / 2 ** 20).toFixed(0)} MiB, ${(growth / bytes).toFixed(1)}× its size\n`);
    assert.ok(growth < RULE * bytes, `the request cost ${(growth / bytes).toFixed(1)}× its size`);
  });
});
