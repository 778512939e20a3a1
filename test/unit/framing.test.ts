import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { eventStreamFraming, framingFor, sseFraming } from '../../src/providers/framing.js';

describe('stream framing: where the complete events end', () => {
  it('SSE: a blank line ends an event, LF or CRLF, and an unfinished event is left out', () => {
    const two = 'data: {"a":1}\n\ndata: {"b":2}\n\n';
    assert.equal(sseFraming(Buffer.from(two)), two.length);
    assert.equal(sseFraming(Buffer.from(`${two}data: {"c"`)), two.length);
    const crlf = 'data: {"a":1}\r\n\r\n';
    assert.equal(sseFraming(Buffer.from(`${crlf}data: {"b`)), crlf.length);
    assert.equal(sseFraming(Buffer.from('event: x\ndata: {"a":')), 0);
    // a single line break inside an event is not a boundary
    assert.equal(sseFraming(Buffer.from('event: ping\ndata: {}\n')), 0);
  });

  it('event stream: whole frames by their length prelude, however the bytes are cut', () => {
    const codec = new EventStreamCodec(toUtf8, fromUtf8);
    const frame = (n: number) =>
      Buffer.from(codec.encode({ headers: { ':event-type': { type: 'string', value: 'contentBlockDelta' } }, body: fromUtf8(JSON.stringify({ n })) }));
    const frames = [frame(1), frame(2), frame(3)];
    const all = Buffer.concat(frames);
    const ends = [frames[0]!.length, frames[0]!.length + frames[1]!.length, all.length];
    for (let cut = 0; cut <= all.length; cut++) {
      const want = [0, ...ends].filter((e) => e <= cut).pop();
      assert.equal(eventStreamFraming(all.subarray(0, cut)), want, `cut at ${cut}`);
    }
  });

  it('picks the framing by content type', () => {
    assert.equal(framingFor('application/vnd.amazon.eventstream'), eventStreamFraming);
    assert.equal(framingFor('text/event-stream; charset=utf-8'), sseFraming);
  });
});
