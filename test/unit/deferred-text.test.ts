import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DeferredText, KEPT_BYTES } from '../../src/providers/usage/deferred-text.js';
import type { StreamedText } from '../../src/providers/usage/streamed-text.js';

/** a DeferredText whose decoder takes every byte as text, recording the batches it is handed */
function spied(): { text: DeferredText; batches: number[] } {
  const batches: number[] = [];
  const text = new DeferredText((out: StreamedText) => ({
    push: (bytes) => {
      batches.push(bytes.length);
      out.add(bytes.toString('latin1'));
    },
  }));
  return { text, batches };
}

const CHUNK = 4096;
const chunk = (i: number) => Buffer.alloc(CHUNK, 0x61 + (i % 26));

describe('DeferredText: a stream is decoded for its text only when the text is asked for', () => {
  it('keeps the chunks unread until sample(), then decodes them once, in order', () => {
    const { text, batches } = spied();
    text.keep(Buffer.from('Hello'), false);
    text.keep(Buffer.from(' world'), true);
    assert.deepEqual(batches, []);
    assert.deepEqual(text.sample(), { text: 'Hello world', chars: 11 });
    assert.deepEqual(batches, [11]);
    // asked again: nothing new to decode
    assert.deepEqual(text.sample(), { text: 'Hello world', chars: 11 });
    assert.deepEqual(batches, [11]);
  });

  it('a stream without usage past the bound is decoded in batches of at most KEPT_BYTES, its text whole', () => {
    const { text, batches } = spied();
    const n = (3 * KEPT_BYTES) / CHUNK + 1;
    for (let i = 0; i < n; i++) text.keep(chunk(i), false);
    assert.equal(batches.length, 3, 'decoded as the kept bytes filled, before any sample()');
    assert.ok(batches.every((b) => b <= KEPT_BYTES));
    const sample = text.sample();
    assert.equal(sample.chars, n * CHUNK);
    assert.equal(sample.text.slice(0, 2 * CHUNK), chunk(0).toString('latin1') + chunk(1).toString('latin1'));
  });

  it('a chunk larger than the bound is decoded as it stands', () => {
    const { text, batches } = spied();
    text.keep(Buffer.from('ab'), false);
    text.keep(Buffer.alloc(KEPT_BYTES + 1, 0x7a), false);
    text.keep(Buffer.from('cd'), false);
    assert.deepEqual(batches, [2, KEPT_BYTES + 1]);
    assert.equal(text.sample().chars, KEPT_BYTES + 5);
  });

  it('once usage was read, the bytes past the bound are dropped, never decoded', () => {
    const { text, batches } = spied();
    for (let i = 0; i < (2 * KEPT_BYTES) / CHUNK; i++) text.keep(chunk(i), true);
    assert.deepEqual(text.sample(), { text: '', chars: 0 });
    assert.deepEqual(batches, []);
  });
});
