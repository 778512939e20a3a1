import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FakeVendor, Recorded } from '../fakes/server.js';
import { oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually } from '../helpers/wait.js';

/**
 * The conformance suite: every provider row answers the same calls through
 * the real gateway against its vendor fake, over raw fetch (no SDK in between),
 * and must behave the same way: non-stream, stream, vendor error relayed,
 * truncation → 502, mid-stream break, client abort reaching the vendor, idle timeout.
 */

/** What a row's fake is scripted to do for one call. */
export type CallKind =
  /** a normal answer */
  | 'ok'
  /** a normal streamed answer */
  | 'stream'
  /** the vendor's own error envelope with the row's `vendorError.status` */
  | 'vendor_error'
  /** 200 with a JSON body cut short */
  | 'truncated'
  /** a stream that sends its first event, then stays silent */
  | 'stall'
  /** a stream that drops the connection after a few events */
  | 'broken';

/** One raw HTTP call against the gateway. */
export interface WireCall {
  path: string;
  headers: Record<string, string>;
  body: string | Buffer;
}

export interface ConformanceCase {
  name: string;
  startFake(): Promise<FakeVendor>;
  /** gateway settings pointing this provider at the fake (GW_UPSTREAM_…) */
  env(fake: FakeVendor): Record<string, string>;
  /** the call a client makes for `kind`, carrying `devKey` and a pass-through vendor credential */
  call(kind: CallKind, devKey: string): WireCall;
  /**
   * The body the vendor must receive for a call: the sent bytes themselves
   * (the default) or, where the route legitimately rewrites, what it must become.
   */
  upstreamBody?(sent: Buffer): Buffer;
  /** the upstream credential header and value the fake must receive */
  upstreamCredential: [header: string, value: string];
  /** asserts a non-stream 200 body is the vendor's reply */
  checkReply(reply: unknown): void;
  stream: {
    /** content-type prefix of the relayed stream */
    contentType: string;
    /** true when the text holds the vendor's complete stream (its terminal event) */
    complete(text: string): boolean;
    /** the gateway-error type of the terminal error event in the text, if there is one */
    errorType(text: string): string | undefined;
  };
  vendorError: { status: number; check(body: unknown): void };
  /** the gateway-error type read from this surface's error envelope */
  errorType(body: unknown): string | undefined;
}

const IDLE_S = 0.5;

async function send(gw: TestGateway, call: WireCall, signal?: AbortSignal): Promise<Response> {
  return fetch(`${gw.url}${call.path}`, { method: 'POST', headers: call.headers, body: call.body, signal });
}

function lastReceived(fake: FakeVendor, before: number): Recorded {
  const rec = fake.received[before];
  assert.ok(rec, 'the vendor fake received the call');
  return rec;
}

/** No gateway header and no developer key reached the vendor. */
function assertNothingOfOursUpstream(rec: Recorded, devKey: string): void {
  for (let i = 0; i < rec.rawHeaders.length; i += 2) {
    const name = (rec.rawHeaders[i] ?? '').toLowerCase();
    assert.ok(!name.startsWith('x-gw-'), `gateway header ${name} went upstream`);
    assert.ok(!(rec.rawHeaders[i + 1] ?? '').includes(devKey), `the developer key went upstream on ${name}`);
  }
  assert.ok(!rec.url.includes(devKey), 'the developer key went upstream in the URL');
}

/** Registers the suite for one row. */
export function conformance(row: ConformanceCase): void {
  describe(`conformance: ${row.name}`, () => {
    let fake: FakeVendor;
    let gw: TestGateway;
    const { bootstrap, devKey } = oneTenant('conf', `conf-${row.name}`);

    before(async () => {
      fake = await row.startFake();
      gw = await startTestGateway({ bootstrap, env: { GW_STREAM_IDLE_S: String(IDLE_S), ...row.env(fake) } });
    });
    after(async () => {
      await gw?.close();
      await fake?.close();
    });

    it('non-stream: the vendor reply comes back, the body reaches the vendor as promised', async () => {
      const call = row.call('ok', devKey);
      const n = fake.received.length;
      const res = await send(gw, call);
      const text = await res.text();
      assert.equal(res.status, 200, text);
      assert.equal(res.headers.get('x-gw-error'), null);
      assert.ok(res.headers.get('x-gw-request-id'));
      row.checkReply(JSON.parse(text));
      const rec = lastReceived(fake, n);
      const sent = Buffer.from(call.body);
      assert.ok(rec.body.equals(row.upstreamBody ? row.upstreamBody(sent) : sent), `upstream body differs:\n${rec.body.toString()}`);
      const [header, value] = row.upstreamCredential;
      assert.equal(rec.headers[header], value);
      assertNothingOfOursUpstream(rec, devKey);
    });

    it('stream: relayed to its terminal event', async () => {
      const res = await send(gw, row.call('stream', devKey));
      const text = await res.text();
      assert.equal(res.status, 200, text);
      assert.ok(res.headers.get('content-type')?.startsWith(row.stream.contentType));
      assert.ok(row.stream.complete(text), `incomplete stream:\n${text}`);
      assert.equal(row.stream.errorType(text), undefined);
    });

    it('vendor error: relayed as the vendor sent it, without x-gw-error', async () => {
      const res = await send(gw, row.call('vendor_error', devKey));
      assert.equal(res.status, row.vendorError.status);
      assert.equal(res.headers.get('x-gw-error'), null);
      row.vendorError.check(await res.json());
    });

    it('truncated 2xx body: 502 upstream_truncated with x-gw-error', async () => {
      const res = await send(gw, row.call('truncated', devKey));
      assert.equal(res.status, 502);
      assert.equal(res.headers.get('x-gw-error'), 'upstream_truncated');
      assert.equal(row.errorType(await res.json()), 'upstream_truncated');
    });

    it('a stream broken mid-way ends with one error event, never a clean end', async () => {
      const res = await send(gw, row.call('broken', devKey));
      const text = await res.text();
      assert.equal(res.status, 200);
      assert.equal(row.stream.complete(text), false);
      assert.ok(row.stream.errorType(text), `no terminal error event:\n${text}`);
    });

    it('a stream cut in the middle of an event ends after a whole event with one parseable error event', async () => {
      const call = row.call('stream', devKey);
      const res = await send(gw, { ...call, headers: { ...call.headers, 'x-fake-cut': 'second-write' } });
      const text = await res.text();
      assert.equal(res.status, 200);
      assert.equal(row.stream.complete(text), false);
      // glued onto half an event, the error event would not parse and no type would be found
      assert.ok(row.stream.errorType(text), `no parseable terminal error event:\n${text}`);
    });

    it('client abort cancels the upstream call', async () => {
      const n = fake.received.length;
      const ac = new AbortController();
      const res = await send(gw, row.call('stall', devKey), ac.signal);
      assert.equal(res.status, 200);
      const reader = res.body!.getReader();
      await reader.read();
      ac.abort();
      await reader.cancel().catch(() => undefined);
      const rec = lastReceived(fake, n);
      await eventually(() => rec.interrupted === true, 'the vendor connection closing after the client went away');
    });

    it(`idle stream: closed after GW_STREAM_IDLE_S with one gateway_timeout event`, async () => {
      const started = Date.now();
      const res = await send(gw, row.call('stall', devKey));
      const text = await res.text();
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-gw-error'), null, 'a mid-stream error carries no header');
      assert.ok(Date.now() - started >= IDLE_S * 1000 * 0.9);
      assert.equal(row.stream.errorType(text), 'gateway_timeout', text);
    });
  });
}

/** Reads the `data:` payloads of an SSE text as JSON (non-JSON payloads such as `[DONE]` are skipped). */
export function sseData(text: string): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).trimStart())
      .join('\n');
    if (data === '') continue;
    try {
      out.push(JSON.parse(data) as Record<string, unknown>);
    } catch {
      // [DONE] and other non-JSON payloads
    }
  }
  return out;
}

/** `{error:{type}}`: the shared envelope, as a JSON body or a chat-completions stream's terminal `data:` event */
export const sharedErrorType = (body: unknown): string | undefined => (body as { error?: { type?: string } } | undefined)?.error?.type;

/** A chat-completions SSE stream: ends with `data: [DONE]`, fails with a shared-envelope event. */
export const chatCompletionsStream: ConformanceCase['stream'] = {
  contentType: 'text/event-stream',
  complete: (text) => text.trimEnd().endsWith('data: [DONE]'),
  errorType: (text) => sseData(text).map(sharedErrorType).find((t) => t !== undefined),
};
