import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HttpResponse } from 'uWebSockets.js';
import type { GatewayError } from '../../src/errors.js';
import { readBody, type BodyReader } from '../../src/server/ingress.js';

/** What readBody handed on, fed the chunks uWS would deliver (each chunk's memory is overwritten after its call, as uWS reuses it). */
function feed(declared: number, max: number, chunks: Buffer[], last = true): { body?: Buffer; tooLarge?: true; grew: number[] } {
  let onData: ((chunk: ArrayBuffer, isLast: boolean) => void) | undefined;
  const res = { onData: (f: typeof onData) => (onData = f) } as unknown as HttpResponse;
  const seen: { body?: Buffer; tooLarge?: true; grew: number[] } = { grew: [] };
  const reader: BodyReader = {
    body: (b) => (seen.body = Buffer.from(b)),
    tooLarge: () => (seen.tooLarge = true),
    grew: (n): GatewayError | undefined => {
      seen.grew.push(n);
      return undefined;
    },
    refused: () => assert.fail('not refused'),
  };
  readBody(res, declared, max, reader);
  const scratch = new ArrayBuffer(Math.max(1, ...chunks.map((c) => c.length)));
  chunks.forEach((c, i) => {
    new Uint8Array(scratch).set(c);
    onData!(scratch.slice(0, c.length), last && i === chunks.length - 1);
    new Uint8Array(scratch).fill(0x21);
  });
  return seen;
}

const bytes = (n: number, seed: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff));

describe('reading a request body', () => {
  const body = bytes(100_000, 7);
  const cuts: Array<[string, number[]]> = [
    ['one chunk', [100_000]],
    ['two halves', [50_000, 50_000]],
    ['a small first chunk, then larger ones (grows more than once)', [10, 990, 9_000, 40_000, 50_000]],
    ['many small chunks', Array.from({ length: 100 }, () => 1_000)],
  ];
  for (const [name, sizes] of cuts) {
    const chunks: Buffer[] = [];
    let at = 0;
    for (const n of sizes) chunks.push(body.subarray(at, (at += n)));
    it(`joins ${name} byte for byte, with a declared length and chunked`, () => {
      assert.ok(feed(body.length, 1e9, chunks).body?.equals(body));
      const chunked = feed(-1, 1e9, chunks);
      assert.ok(chunked.body?.equals(body));
      assert.deepEqual(chunked.grew, sizes, 'a chunked body reports each chunk as it grows');
    });
  }

  it('keeps no byte past the declared length', () => {
    assert.deepEqual(feed(5, 1e9, [Buffer.from('abc'), Buffer.from('defgh')]).body, Buffer.from('abcde'));
  });

  it('an empty body is an empty buffer', () => {
    assert.equal(feed(-1, 1e9, [Buffer.alloc(0)]).body?.length, 0);
  });

  it('holds at most twice what arrived of a body declared far larger', () => {
    const MiB = 2 ** 20;
    const chunks = [bytes(MiB / 2, 1), bytes(MiB / 2, 2)];
    const before = process.memoryUsage().arrayBuffers;
    feed(256 * MiB, 512 * MiB, chunks, false);
    const held = process.memoryUsage().arrayBuffers - before;
    // the feed's own scratch and chunk copies are about 1 MiB more
    assert.ok(held < 4 * MiB, `1 MiB of a 256 MiB body holds ${held} bytes`);
  });

  it('stops a chunked body the chunk it passes the largest accepted', () => {
    const seen = feed(-1, 1_500, [bytes(1_000, 1), bytes(1_000, 2), bytes(1_000, 3)]);
    assert.equal(seen.tooLarge, true);
    assert.equal(seen.body, undefined);
    assert.deepEqual(seen.grew, [1_000]);
  });
});
