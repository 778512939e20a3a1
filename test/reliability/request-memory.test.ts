import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startFakeAnthropic } from '../fakes/anthropic.js';
import type { FakeVendor } from '../fakes/server.js';
import { bootstrapFile, oneTenant, startTestGateway } from '../helpers/gateway.js';
import { spawnGateway, stopGateway } from '../helpers/gateway-process.js';
import { requestHead } from '../helpers/raw-http.js';
import { eventually } from '../helpers/wait.js';

/**
 * The memory one large translated request costs, measured on a gateway
 * process of its own: its peak resident set (VmHWM, reset through
 * /proc/<pid>/clear_refs just before the request) against its resident set
 * before. VmHWM is the whole process's, the skill pool's threads included.
 * The rule is Envoy's: no request may cost more than 10× its size. The body
 * is a 30 MB conversation of 545k short messages translated to the Messages
 * format, the shape that cost 20× when a conversation was translated as an
 * object tree and then serialised.
 *
 * The conversation goes as a chat-completions body and as a /v1/execute body
 * naming eight fallbacks (the first candidate answers: what is measured is
 * what planning every candidate holds). Each is measured with the skill
 * stages given no time (GW_SKILL_CEILING_*_MS=0, so the call is relayed as a
 * passthrough, still translated), which is the relay's own cost (the body's
 * upload, its parse, the translation, the relay and the accounting), and with
 * every skill stage at its default, where the pool threads read the body too.
 */
const MESSAGES = 545_000;
const RULE = 10;
const MODEL = 'claude-sonnet-4-5';
/** eight further candidates, each translated to the Messages format */
const FALLBACKS = ['claude-opus-4-1', 'claude-sonnet-4-0', 'claude-haiku-4-5', 'claude-3-5-haiku', 'claude-opus-4-1', 'claude-sonnet-4-0', 'claude-haiku-4-5', 'claude-3-5-haiku'];
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

const conversation = (): unknown[] => Array.from({ length: MESSAGES }, (_, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: 'hello there, how are you' }));

/** One way to send the conversation: its route and the body around the messages. */
interface Shape {
  name: string;
  path: string;
  body(messages: unknown[]): Record<string, unknown>;
}

const CHAT: Shape = { name: 'a chat-completions body', path: '/v1/chat/completions', body: (messages) => ({ model: MODEL, max_tokens: 5, messages }) };
const EXECUTE: Shape = {
  name: `a /v1/execute body with ${FALLBACKS.length} fallbacks`,
  path: '/v1/execute',
  body: (messages) => ({ target: { model: MODEL, fallbacks: FALLBACKS }, input: { messages }, execution: { max_tokens: 5 } }),
};

/**
 * A busy machine may take seconds over a 30 MB body: the measured request is
 * never shed for its wait, nor the shadow stages for the loop's stalls (a
 * window so long that no stall here reaches a share of it).
 */
const UNSHED = { GW_QUEUE_WAIT_MAX_S: '600', GW_LOOP_STALL_WINDOW_S: '86400' };

interface Settings {
  name: string;
  env: Record<string, string>;
  /** request headers: a per-key skill switched to acting for this request */
  headers?: Record<string, string>;
  /** a stage's x-gw-skill-<id> header and the outcome it must carry */
  outcome?: [string, string];
}

const NO_TIME: Settings = { name: 'the skill stages given no time', env: { GW_SKILL_CEILING_ACTING_MS: '0', GW_SKILL_CEILING_SHADOW_MS: '0' } };
const DEFAULTS: Settings = { name: 'every skill stage at its default', env: {} };
/**
 * The per-key stages that edit the messages, acting, every acting stage given
 * all the time it may have (so the guardrails stage finishes its walk and the
 * stage runs at all): a body past the size they parse whole is relayed as
 * sent, the stage failing open with its reason, as one that misses its
 * ceiling does.
 */
const UNBOUNDED = { GW_SKILL_CEILING_ACTING_MS: '60000' };
const PII: Settings = { name: 'pii_redaction acting', env: UNBOUNDED, headers: { 'x-gw-skills': 'pii_redaction=prod' }, outcome: ['x-gw-skill-pii-redaction', 'ceiling_exceeded'] };
const COMPACTION: Settings = {
  name: 'prompt_compaction acting',
  env: UNBOUNDED,
  headers: { 'x-gw-skills': 'prompt_compaction=prod' },
  outcome: ['x-gw-skill-prompt-compaction', 'ceiling_exceeded'],
};

const CASES: ReadonlyArray<[Shape, Settings]> = [
  [CHAT, NO_TIME],
  [EXECUTE, NO_TIME],
  [CHAT, DEFAULTS],
  [EXECUTE, DEFAULTS],
  [CHAT, PII],
  [CHAT, COMPACTION],
];

describe('memory of one large translated request', () => {
  let fake: FakeVendor;
  before(async () => {
    fake = await startFakeAnthropic();
  });
  after(() => fake.close());

  for (const [shape, settings] of CASES) {
    it(`${shape.name}, ${settings.name}: under ${RULE}× its size`, async (t) => {
      // a process of its own for each case: a heap an earlier request grew would hide this one's growth
      const gw = await spawnGateway({ GW_BOOTSTRAP: await bootstrapFile(bootstrap), GW_UPSTREAM_MSGVENDOR: fake.origin, GW_LOG_LEVEL: 'info', ...UNSHED, ...settings.env });
      t.after(() => stopGateway(gw));
      const send = (messages: unknown[]) =>
        fetch(`http://127.0.0.1:${gw.port}${shape.path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-gw-key': devKey, 'x-gw-provider-key': 'sk-test', ...settings.headers },
          body: JSON.stringify(shape.body(messages)),
        });
      const pid = gw.child.pid as number;
      if (!canResetPeak(pid)) return t.skip('/proc/<pid>/clear_refs cannot reset the peak resident set here');
      const warm = await send([{ role: 'user', content: 'warm up' }]);
      assert.equal(warm.status, 200);
      await warm.arrayBuffer();
      const messages = conversation();
      const bytes = Buffer.byteLength(JSON.stringify(shape.body(messages)));
      canResetPeak(pid);
      const rssBefore = procStatus(pid, 'VmRSS');
      const res = await send(messages);
      assert.equal(res.status, 200, await res.clone().text());
      await res.arrayBuffer();
      const growth = procStatus(pid, 'VmHWM') - rssBefore;
      const sent = JSON.parse(String(fake.received.at(-1)?.body)) as { model: string; messages: unknown[] };
      assert.equal(sent.model, MODEL, 'the first candidate answered');
      assert.equal(sent.messages.length, MESSAGES, 'the vendor got every turn');
      process.stdout.write(`${shape.name}, ${settings.name}: ${(bytes / 1e6).toFixed(1)} MB (${MESSAGES} messages), peak RSS growth ${(growth / 2 ** 20).toFixed(0)} MiB, ${(growth / bytes).toFixed(1)}× its size\n`);
      assert.ok(growth < RULE * bytes, `the request cost ${(growth / bytes).toFixed(1)}× its size`);
      if (settings.outcome) assert.equal(res.headers.get(settings.outcome[0]), settings.outcome[1], JSON.stringify([...res.headers]));
    });
  }
});

describe('memory of bodies declared and not sent', () => {
  it('a client that declares 32 MiB and sends nothing holds none of it: eight such requests pending add less than one body', async () => {
    const { bootstrap: b, devKey: key } = oneTenant('declared');
    const gw = await startTestGateway({ bootstrap: b });
    const sockets: Socket[] = [];
    try {
      const DECLARED = 32 * 1024 * 1024;
      const PENDING = 8;
      const inflightBytes = async () => ((await (await fetch(`${gw.url}/healthz`)).json()) as { overload: { inflight_bytes: number } }).overload.inflight_bytes;
      const before = process.memoryUsage().arrayBuffers;
      for (let i = 0; i < PENDING; i++) {
        const s = connect(gw.port, '127.0.0.1');
        s.on('error', () => undefined);
        s.write(requestHead('POST', '/v1/chat/completions', `x-gw-key: ${key}`, 'content-type: application/json', `content-length: ${DECLARED}`));
        sockets.push(s);
      }
      await eventually(async () => (await inflightBytes()) === PENDING * DECLARED, 'every declared body counted in flight');
      const grown = process.memoryUsage().arrayBuffers - before;
      assert.ok(grown < DECLARED, `${PENDING} pending requests declaring ${DECLARED} bytes each hold ${grown} bytes of buffers`);
    } finally {
      for (const s of sockets) s.destroy();
      await gw.close();
    }
  });
});
