import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually } from '../helpers/wait.js';

/**
 * Upstream faults, PR tier: a reply reset mid-body, a reply that stalls, a
 * truncated reply and one far over GW_MAX_REPLY_BYTES. Each is one clean
 * answer from the gateway; the oversized one cancels the upstream and costs
 * the gateway no memory of its size.
 */
const CAP = 1024 * 1024;
/** what the oversized upstream sends at most when nobody cancels it */
const HUGE = 300 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 0x78);

interface FaultyUpstream {
  origin: string;
  /** bytes the oversized reply wrote before its client went away */
  hugeWritten: number;
  hugeClosed: boolean;
  close(): Promise<void>;
}

async function startFaultyUpstream(): Promise<FaultyUpstream> {
  const state = { hugeWritten: 0, hugeClosed: false };
  const huge = (res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"id":"x","content":"');
    res.on('close', () => (state.hugeClosed = true));
    const pump = () => {
      while (!res.destroyed && state.hugeWritten < HUGE) {
        state.hugeWritten += CHUNK.length;
        if (!res.write(CHUNK)) return void res.once('drain', pump);
      }
      if (!res.destroyed) res.end('"}');
    };
    pump();
  };
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const { model } = JSON.parse(Buffer.concat(parts).toString()) as { model: string };
      if (model === 'huge') return huge(res);
      if (model === 'huge_declared') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(HUGE) });
        return void res.write(CHUNK);
      }
      if (model === 'reset') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
        res.write('{"id":"cut');
        return void setTimeout(() => res.socket?.destroy(), 20);
      }
      if (model === 'stall') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
        return void res.write('{"id":"stalled');
      }
      if (model === 'truncated') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end('{"id":"chatcmpl-1","choices":[{"mess');
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'ok', object: 'chat.completion', model, choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    origin: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    get hugeWritten() {
      return state.hugeWritten;
    },
    get hugeClosed() {
      return state.hugeClosed;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

describe('upstream faults (reliability, PR tier)', () => {
  const { bootstrap, devKey } = oneTenant('faults');
  let up: FaultyUpstream;
  let gw: TestGateway;
  const call = (model: string) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gw-key': devKey, 'x-gw-provider-key': 'sk-test' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
    });

  before(async () => {
    up = await startFaultyUpstream();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_OPENAI: up.origin, GW_MAX_REPLY_BYTES: String(CAP), GW_REQUEST_DEADLINE_S: '1' } });
  });
  after(async () => {
    await gw.close();
    await up.close();
  });

  it('a non-streamed reply past GW_MAX_REPLY_BYTES is a 502, the upstream is cancelled, and memory does not grow by the reply', async () => {
    global.gc?.();
    const rssBefore = process.memoryUsage().rss;
    const res = await call('huge');
    assert.equal(res.status, 502);
    assert.equal(res.headers.get('x-gw-error'), null, 'an engine-raised summary of the upstream');
    const body = (await res.json()) as { error: { type: string; message: string } };
    assert.equal(body.error.type, 'upstream_unavailable');
    assert.match(body.error.message, /exceeds the gateway's limit of 1048576 bytes/);
    await eventually(() => up.hugeClosed, 'the upstream saw its reply cancelled');
    const grewMb = (process.memoryUsage().rss - rssBefore) / 2 ** 20;
    process.stdout.write(`oversized reply: upstream wrote ${(up.hugeWritten / 2 ** 20).toFixed(1)} MiB before the cancel; RSS grew ${grewMb.toFixed(1)} MiB (reply would be ${HUGE / 2 ** 20} MiB)\n`);
    assert.ok(up.hugeWritten < HUGE, 'the upstream did not get to send the whole reply');
    assert.ok(grewMb < 100, `RSS grew ${grewMb.toFixed(1)} MiB for a ${HUGE / 2 ** 20} MiB reply`);
  });

  it('a reply declaring a length past the cap is refused before its body is buffered', async () => {
    const res = await call('huge_declared');
    assert.equal(res.status, 502);
    assert.equal(((await res.json()) as { error: { type: string } }).error.type, 'upstream_unavailable');
  });

  it('a reply reset mid-body is a 502 upstream_unavailable', async () => {
    const res = await call('reset');
    assert.equal(res.status, 502);
    assert.equal(((await res.json()) as { error: { type: string } }).error.type, 'upstream_unavailable');
  });

  it('a reply that stalls mid-body is a 504 gateway_timeout at the request deadline', async () => {
    const res = await call('stall');
    assert.equal(res.status, 504);
    assert.equal(res.headers.get('x-gw-error'), 'gateway_timeout');
  });

  it('a 2xx reply that is not whole JSON is 502 upstream_truncated, never a 200', async () => {
    const res = await call('truncated');
    assert.equal(res.status, 502);
    assert.equal(res.headers.get('x-gw-error'), 'upstream_truncated');
    // the kind docs/operations.md (Metrics) lists for it
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.match(metrics, /^gw_upstream_errors_total\{provider="openai",kind="truncated"\} 1$/m);
  });

  it('after every fault the gateway still answers', async () => {
    const res = await call('fine');
    assert.equal(res.status, 200);
    await res.body?.cancel();
  });
});
