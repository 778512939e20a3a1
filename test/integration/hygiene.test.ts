import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { NOTE_BYTES, startFakeOpenAI, type FakeOpenAI } from '../fakes/openai.js';
import { oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually } from '../helpers/wait.js';
import { rawExchange as exchange } from '../helpers/raw-http.js';

/**
 * Request hygiene at the front, over raw sockets. What this uWS build does on
 * its own (found by probing it): it closes the connection without an answer on
 * Content-Length beside Transfer-Encoding, `Transfer-Encoding: identity`, a
 * malformed Content-Length and broken chunk framing; it never dispatches a
 * request whose header bytes carry NUL, CTLs, a bare CR or LF or obs-fold (it
 * stalls it until its idle timeout); and it drops a connection that pipelines a
 * request while the previous answer is pending. What it lets through and the
 * front refuses: repeated Content-Length, a Transfer-Encoding other than
 * `chunked`, and bodies past GW_MAX_BODY_BYTES.
 */
const MAX_BODY = 4096;

const statuses = (text: string): number[] => [...text.matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((m) => Number(m[1]));

/**
 * A check that `text` holds whole answers to requests of these methods, in
 * order: a HEAD answer ends with its head, any other after its Content-Length
 * bytes or its last chunk.
 */
const answersTo =
  (...methods: string[]) =>
  (text: string): boolean => {
    let at = 0;
    for (const method of methods) {
      const headEnd = text.indexOf('\r\n\r\n', at);
      if (headEnd === -1) return false;
      const fields = text.slice(at, headEnd);
      at = headEnd + 4;
      if (method === 'HEAD') continue;
      const length = /^content-length: *(\d+)\r?$/im.exec(fields);
      if (length) {
        at += Number(length[1]);
        if (at > text.length) return false;
        continue;
      }
      for (;;) {
        const eol = text.indexOf('\r\n', at);
        if (eol === -1) return false;
        const size = parseInt(text.slice(at, eol), 16);
        at = eol + 2 + size + 2;
        if (at > text.length) return false;
        if (size === 0) break;
      }
    }
    return true;
  };

describe('request hygiene at the front (raw sockets)', () => {
  let fake: FakeOpenAI;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('hyg');
  const body = JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
  /** a complete, valid request with its own credential, hidden behind the one under test */
  const smuggled = [
    'POST /v1/chat/completions HTTP/1.1',
    'Host: gw',
    `x-gw-key: ${devKey}`,
    'x-gw-provider-key: sk-smuggled',
    'content-type: application/json',
    `content-length: ${body.length}`,
    '',
    body,
  ].join('\r\n');
  const head = (...extra: string[]) =>
    ['POST /v1/chat/completions HTTP/1.1', 'Host: gw', `x-gw-key: ${devKey}`, 'x-gw-provider-key: sk-front', 'content-type: application/json', ...extra, '', ''].join('\r\n');
  const chunked = (data: string) => `${data.length.toString(16)}\r\n${data}\r\n0\r\n\r\n`;

  before(async () => {
    fake = await startFakeOpenAI();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin, GW_MAX_BODY_BYTES: String(MAX_BODY) } });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  /** nothing of the exchange, and above all not the smuggled request, reached the vendor */
  const assertNothingUpstream = (before: number) => {
    assert.equal(fake.received.length, before, 'the vendor received a request');
    const seen = Buffer.concat(fake.rawConnections.flat()).toString('latin1');
    assert.equal(seen.includes('sk-smuggled'), false, 'the smuggled request reached the vendor');
  };

  const refusedCases: Array<[string, string]> = [
    ['two equal Content-Length headers', head(`content-length: ${body.length}`, `content-length: ${body.length}`) + body],
    ['two different Content-Length headers', head(`content-length: ${body.length}`, 'content-length: 0') + body],
    ['Content-Length beside Transfer-Encoding', head(`content-length: ${body.length + 5}`, 'transfer-encoding: chunked') + chunked(body)],
    ['Transfer-Encoding before Content-Length', head('transfer-encoding: chunked', 'content-length: 4') + chunked(body)],
    ['a Transfer-Encoding other than chunked', head('transfer-encoding: gzip, chunked') + chunked(body)],
    ['Transfer-Encoding: identity', head('transfer-encoding: identity', `content-length: ${body.length}`) + body],
    ['repeated Transfer-Encoding headers', head('transfer-encoding: chunked', 'transfer-encoding: chunked') + chunked(body)],
    ['a chunk size that is not hex', head('transfer-encoding: chunked') + `zz\r\n${body}\r\n0\r\n\r\n`],
    ['a chunk shorter than its size line', head('transfer-encoding: chunked') + `5\r\n${body}\r\n0\r\n\r\n`],
    ['a chunk size past 64 bits', head('transfer-encoding: chunked') + `FFFFFFFFFFFFFFFFFF\r\n${body}\r\n0\r\n\r\n`],
    ['a negative Content-Length', head('content-length: -1') + body],
    ['a Content-Length list', head(`content-length: ${body.length}, ${body.length}`) + body],
  ];

  for (const [name, request] of refusedCases) {
    it(`${name}: refused, connection closed, the pipelined request never reaches the vendor`, async () => {
      const before = fake.received.length;
      const reply = await exchange(gw.port, request + smuggled);
      assert.equal(reply.closed, true, `connection left open:\n${reply.text}`);
      // uWS drops the connection on its own, or the front answers 400: never a 2xx
      for (const s of statuses(reply.text)) assert.equal(s, 400, reply.text);
      await sleep(50);
      assertNothingUpstream(before);
    });
  }

  for (const [name, request] of refusedCases.slice(0, 2).concat(refusedCases.slice(4, 5), refusedCases.slice(6, 7))) {
    it(`${name}, alone: 400 in the shared envelope with x-gw-error, then the connection closes`, async () => {
      const before = fake.received.length;
      const reply = await exchange(gw.port, request);
      assert.deepEqual(statuses(reply.text), [400], reply.text);
      assert.match(reply.text, /^x-gw-error: request_error\r$/m);
      assert.match(reply.text, /^Connection: close\r$/im);
      assert.match(reply.text, /\{"error":\{"message":"[^"]+","type":"request_error","code":400\}\}$/);
      assert.equal(reply.closed, true);
      assertNothingUpstream(before);
    });
  }

  for (const [name, bytes] of [
    ['NUL', 'a\0b'],
    ['a bare CR', 'a\rb'],
    ['a bare LF', 'a\nx-other: b'],
    ['a control byte', 'a\x01b'],
  ] as const) {
    it(`a header value with ${name} is never dispatched, nor is what follows it`, async () => {
      const before = fake.received.length;
      const reply = await exchange(gw.port, head(`x-note: ${bytes}`, `content-length: ${body.length}`) + body + smuggled, { waitMs: 400 });
      for (const s of statuses(reply.text)) assert.equal(s, 400, reply.text);
      assertNothingUpstream(before);
    });
  }

  it('chunked framing that is valid is relayed with its decoded body', async () => {
    const before = fake.received.length;
    const reply = await exchange(gw.port, head('transfer-encoding: chunked') + chunked(body), { until: answersTo('POST') });
    assert.deepEqual(statuses(reply.text), [200], reply.text);
    assert.equal(fake.received.length, before + 1);
    assert.equal(fake.received[before]?.body.toString(), body);
  });

  it('no answer names the server: no uWebSockets header on success, error, HEAD, a relayed reply or a refusal', async () => {
    const answers = [
      await exchange(gw.port, 'GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n', { until: answersTo('GET') }),
      await exchange(gw.port, 'HEAD /healthz HTTP/1.1\r\nHost: gw\r\n\r\n', { until: answersTo('HEAD') }),
      await exchange(gw.port, 'GET /no/such/route HTTP/1.1\r\nHost: gw\r\n\r\n', { until: answersTo('GET') }),
      await exchange(gw.port, head(`content-length: ${body.length}`) + body, { until: answersTo('POST') }),
      await exchange(gw.port, head(`content-length: ${body.length}`, `content-length: ${body.length}`) + body),
    ];
    assert.deepEqual(answers.map((a) => statuses(a.text)), [[200], [200], [404], [200], [400]]);
    for (const a of answers) assert.doesNotMatch(a.text.slice(0, a.text.indexOf('\r\n\r\n')), /uwebsockets/i, a.text);
  });

  it('HEAD answers carry headers only, and the connection stays in sync for the next request', async () => {
    const reply = await exchange(gw.port, 'HEAD /healthz HTTP/1.1\r\nHost: gw\r\n\r\n', { until: answersTo('HEAD') });
    assert.deepEqual(statuses(reply.text), [200]);
    const length = Number(/^Content-Length: (\d+)\r$/im.exec(reply.text)?.[1]);
    assert.ok(length > 0, 'HEAD reports the GET length');
    assert.equal(reply.text.endsWith('\r\n\r\n'), true, `HEAD carried a body:\n${reply.text}`);

    for (const request of ['HEAD /no/such/route HTTP/1.1\r\nHost: gw\r\n\r\n', 'HEAD /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n\r\n']) {
      const r = await exchange(gw.port, request, { until: answersTo('HEAD') });
      assert.equal(r.text.endsWith('\r\n\r\n'), true, `HEAD error carried a body:\n${r.text}`);
      assert.match(r.text, /^x-gw-error: (not_found|method_not_allowed)\r$/m);
    }

    // two requests one after the other on one connection: the second is parsed where the first ended
    const socket = connect(gw.port, '127.0.0.1');
    const seen: Buffer[] = [];
    socket.on('data', (d: Buffer) => seen.push(d));
    const seenText = () => Buffer.concat(seen).toString('latin1');
    socket.write('HEAD /healthz HTTP/1.1\r\nHost: gw\r\n\r\n');
    await eventually(() => answersTo('HEAD')(seenText()), 'the HEAD answer');
    socket.write('GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n');
    await eventually(() => answersTo('HEAD', 'GET')(seenText()), 'the GET answer');
    socket.destroy();
    const text = seenText();
    assert.deepEqual(statuses(text), [200, 200]);
    assert.equal(JSON.parse(text.slice(text.lastIndexOf('\r\n\r\n') + 4)).status, 'ok');
  });

  it('hop-by-hop headers, headers named in Connection and every x-gw-* header stay at the gateway', async () => {
    const before = fake.received.length;
    const reply = await exchange(
      gw.port,
      head(
        'connection: keep-alive, x-hop-private',
        'keep-alive: timeout=5',
        'x-hop-private: secret-hop',
        'te: trailers',
        'trailer: x-late',
        'proxy-authorization: Basic Zm9vOmJhcg==',
        'x-gw-session: s-1',
        'x-gw-team: red',
        'x-gw-anything-else: 1',
        'x-forwarded-for: 10.0.0.1',
        'x-custom: kept',
        `content-length: ${body.length}`,
      ) + body,
      { until: answersTo('POST') },
    );
    assert.deepEqual(statuses(reply.text), [200], reply.text);
    const got = fake.received[before];
    assert.ok(got);
    for (const h of ['keep-alive', 'x-hop-private', 'te', 'trailer', 'proxy-authorization', 'x-forwarded-for', 'x-gw-key', 'x-gw-provider-key']) {
      assert.equal(got.headers[h], undefined, `${h} went upstream`);
    }
    assert.deepEqual(Object.keys(got.headers).filter((h) => h.startsWith('x-gw-')), []);
    assert.equal(got.headers['x-custom'], 'kept');
    assert.equal(got.headers['authorization'], 'Bearer sk-front');
    assert.equal(got.headers['content-length'], String(body.length));
  });

  it('a header value with UTF-8 beyond ASCII goes upstream as the bytes sent, not as a 502', async () => {
    const before = fake.received.length;
    // inside the value: the uWS parser trims non-ASCII bytes at either end of one
    const value = Buffer.from('José 🌍 Zoë (é)', 'utf8');
    const [start = '', end = ''] = (head('x-custom: VALUE', `content-length: ${body.length}`) + body).split('VALUE');
    const request = Buffer.concat([Buffer.from(start), value, Buffer.from(end)]);
    const reply = await exchange(gw.port, request, { until: answersTo('POST') });
    assert.deepEqual(statuses(reply.text), [200], reply.text);
    assert.equal(fake.received.length, before + 1);
    const seen = Buffer.concat(fake.rawConnections.flat());
    const line = Buffer.concat([Buffer.from('x-custom: '), value, Buffer.from('\r\n')]);
    assert.ok(seen.includes(line), `the upstream request carried x-custom as: ${/x-custom: ([^\r]*)/.exec(seen.toString('latin1'))?.[1]}`);
  });

  it('a vendor header value beyond ASCII reaches the caller as the bytes the vendor sent', async () => {
    const payload = JSON.stringify({ model: 'header_bytes', messages: [{ role: 'user', content: 'hi' }] });
    const reply = await exchange(gw.port, head(`content-length: ${payload.length}`) + payload, { until: answersTo('POST') });
    assert.deepEqual(statuses(reply.text), [200], reply.text);
    const line = Buffer.concat([Buffer.from('x-vendor-note: '), NOTE_BYTES, Buffer.from('\r\n')]);
    // the reply's text is its bytes one character each (latin1)
    assert.ok(reply.text.includes(line.toString('latin1')), `the reply carried x-vendor-note as: ${Buffer.from(/x-vendor-note: ([^\r]*)/.exec(reply.text)?.[1] ?? '', 'latin1').toString('hex')}`);
  });

  it('a safe x-request-id is reflected; anything else is replaced by a generated id', async () => {
    const ask = (id: string) => exchange(gw.port, `GET /healthz HTTP/1.1\r\nHost: gw\r\nx-request-id: ${id}\r\n\r\n`, { until: answersTo('GET') });
    const ok = await ask('trace-42.abc:def/1');
    assert.match(ok.text, /^x-gw-request-id: trace-42\.abc:def\/1\r$/m);
    for (const bad of ['<script>alert(1)</script>', 'a b', 'x'.repeat(200), 'id;"quoted"', 'ünïcode']) {
      const r = await ask(bad);
      const echoed = /^x-gw-request-id: (.*)\r$/m.exec(r.text)?.[1];
      assert.match(echoed ?? '', /^[0-9a-f-]{36}$/, `unsafe id reflected: ${echoed}`);
    }
  });

  it('a path reflected in a 404 is cut and stripped to printable ASCII', async () => {
    const long = `/${'%E2%80%A8'.repeat(10)}${'a'.repeat(400)}`;
    const r = await exchange(gw.port, `GET ${long} HTTP/1.1\r\nHost: gw\r\n\r\n`, { until: answersTo('GET') });
    assert.deepEqual(statuses(r.text), [404]);
    const message = JSON.parse(r.text.slice(r.text.indexOf('\r\n\r\n') + 4)).error.message as string;
    assert.ok(message.length < 240, message);
    assert.match(message, /^[\x20-\x7e]*$/);
  });
});

describe('body limit, backpressure and aborts at the front', () => {
  let fake: FakeOpenAI;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('bp');
  const request = (model: string, extra: Record<string, unknown> = {}) => {
    const body = JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra });
    return `POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nx-gw-key: ${devKey}\r\nx-gw-provider-key: sk-bp\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
  };

  before(async () => {
    fake = await startFakeOpenAI();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin, GW_MAX_BODY_BYTES: String(MAX_BODY) } });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  it('a declared body past GW_MAX_BODY_BYTES is 413 in the shared envelope before it is read', async () => {
    const before = fake.received.length;
    const reply = await exchange(gw.port, `POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nx-gw-key: ${devKey}\r\ncontent-length: ${MAX_BODY + 1}\r\n\r\n`);
    assert.deepEqual(statuses(reply.text), [413], reply.text);
    assert.match(reply.text, /^x-gw-error: payload_too_large\r$/m);
    assert.match(reply.text, /"type":"payload_too_large","code":413/);
    assert.equal(reply.closed, true);
    assert.equal(fake.received.length, before);
  });

  it('a chunked body that grows past GW_MAX_BODY_BYTES is 413 and the connection closes', async () => {
    const before = fake.received.length;
    const piece = 'z'.repeat(1000);
    const chunks = Array.from({ length: 6 }, () => `${piece.length.toString(16)}\r\n${piece}\r\n`).join('');
    const reply = await exchange(gw.port, `POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nx-gw-key: ${devKey}\r\ntransfer-encoding: chunked\r\n\r\n${chunks}0\r\n\r\n`);
    assert.deepEqual(statuses(reply.text), [413], reply.text);
    assert.match(reply.text, /"type":"payload_too_large"/);
    assert.equal(reply.closed, true);
    assert.equal(fake.received.length, before);
  });

  /** Sends `payload`, reads nothing for `pauseMs`, then reads until `complete(size, tail)` says the reply has ended. */
  async function slowRead(payload: string, pauseMs: number, whilePaused: () => void, complete: (head: string, size: number, tail: string) => boolean): Promise<Buffer> {
    const socket: Socket = connect(gw.port, '127.0.0.1');
    const parts: Buffer[] = [];
    let size = 0;
    let tail = '';
    socket.pause();
    socket.write(payload);
    await sleep(pauseMs);
    whilePaused();
    return new Promise((resolve, reject) => {
      socket.on('data', (d: Buffer) => {
        parts.push(d);
        size += d.length;
        tail = (tail + d.subarray(-64).toString('latin1')).slice(-64);
        if (complete((parts[0] as Buffer).subarray(0, 1024).toString('latin1'), size, tail)) {
          socket.destroy();
          resolve(Buffer.concat(parts, size));
        }
      });
      socket.on('error', reject);
      socket.resume();
    });
  }

  /** the body of an HTTP/1.1 chunked response */
  function dechunk(raw: Buffer): Buffer {
    const out: Buffer[] = [];
    let at = raw.indexOf('\r\n\r\n') + 4;
    for (;;) {
      const eol = raw.indexOf('\r\n', at);
      const n = parseInt(raw.subarray(at, eol).toString('latin1'), 16);
      if (!(n > 0)) break;
      out.push(raw.subarray(eol + 2, eol + 2 + n));
      at = eol + 2 + n + 2;
    }
    return Buffer.concat(out);
  }

  it('a large buffered reply reaches a slow reader whole (tryEnd/onWritable)', async () => {
    const size = 8 * 1024 * 1024;
    const reply = await slowRead(request(`big_${size}`), 300, () => undefined, (head, got) => {
      const headEnd = head.indexOf('\r\n\r\n');
      const length = Number(/content-length: (\d+)/i.exec(head)?.[1]);
      return headEnd !== -1 && got - headEnd - 4 >= length;
    });
    const text = reply.toString();
    const json = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { choices: Array<{ message: { content: string } }> };
    assert.equal(json.choices[0]?.message.content.length, size);
  });

  it('a stream to a reader that stops reading pauses the vendor (backpressure end to end)', async () => {
    const chunks = 1200; // 75 MiB: more than every socket buffer on the way
    const finishedBefore = fake.streamsFinished;
    let finishedWhilePaused = -1;
    const reply = await slowRead(request(`bigstream_${chunks}`, { stream: true }), 1500, () => {
      finishedWhilePaused = fake.streamsFinished - finishedBefore;
    }, (_head, _size, tail) => tail.endsWith('0\r\n\r\n'));
    assert.equal(finishedWhilePaused, 0, 'the vendor wrote the whole stream although the client read nothing');
    const events = dechunk(reply).toString('latin1').split('\n\n').filter((e) => e.includes('chat.completion.chunk'));
    assert.equal(events.length, chunks);
    await eventually(() => fake.streamsFinished !== finishedBefore, 'the vendor finishing its stream');
    assert.equal(fake.streamsFinished - finishedBefore, 1);
  });

  for (const [name, model, stream] of [
    ['a buffered call', 'slow_3000', false],
    ['a stream', 'stall_stream', true],
  ] as const) {
    it(`a client that goes away aborts the upstream call (${name})`, async () => {
      const before = fake.received.length;
      const socket = connect(gw.port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.write(request(model, stream ? { stream: true } : {}));
      await eventually(() => fake.received.length > before, 'the call reaching the vendor');
      const got = fake.received[before]!;
      await sleep(100);
      socket.destroy();
      await eventually(() => got.interrupted === true, 'the vendor connection closing after the client left');
    });
  }
});
