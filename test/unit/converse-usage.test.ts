import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { exceptionFrame } from '../../src/providers/eventstream.js';
import { converseStreamUsage, converseUsage } from '../../src/providers/usage/converse.js';
import { converseStreamFrames } from '../fakes/bedrock.js';

const STREAM = Buffer.concat(converseStreamFrames());
// the fake stream reports inputTokens 12 and cacheReadInputTokens 3: a 15-token prompt
const EXPECTED = { input_tokens: 15, output_tokens: 6, cached_tokens: 3, cache_write_tokens: 0 };

describe('converse usage', () => {
  it('reads usage of a Converse reply', () => {
    // inputTokens excludes cache reads and writes: the prompt is the sum, so cached tokens are never subtracted from the uncached part
    assert.deepEqual(converseUsage({ usage: { inputTokens: 7, outputTokens: 2, totalTokens: 13, cacheReadInputTokens: 4, cacheWriteInputTokens: 2 } }), { input_tokens: 13, output_tokens: 2, cached_tokens: 4, cache_write_tokens: 2 });
    assert.equal(converseUsage({ output: {} }), undefined);
  });

  it('reads the metadata frame of a ConverseStream whatever the chunking', () => {
    for (const size of [1, 3, 7, 64, STREAM.length]) {
      const reader = converseStreamUsage();
      for (let at = 0; at < STREAM.length; at += size) reader.push(STREAM.subarray(at, at + size));
      assert.deepEqual(reader.usage(), EXPECTED, `chunks of ${size} bytes`);
    }
  });

  it('has no usage before the metadata frame, and ignores a frame whose CRC is wrong', () => {
    const frames = converseStreamFrames();
    const reader = converseStreamUsage();
    reader.push(Buffer.concat(frames.slice(0, -1)));
    assert.equal(reader.usage(), undefined);
    const corrupt = Buffer.from(frames.at(-1)!);
    corrupt[corrupt.length - 1]! ^= 0xff;
    reader.push(corrupt);
    assert.equal(reader.usage(), undefined);
  });

  it('stops reading a body that is not an event stream instead of misreading it', () => {
    const reader = converseStreamUsage();
    reader.push(Buffer.from('\0\0\0\x01garbage that is not framed'));
    reader.push(STREAM);
    assert.equal(reader.usage(), undefined);
  });
});

describe('exception frame', () => {
  it('decodes with valid CRCs into an exception message', () => {
    const message = new EventStreamCodec(toUtf8, fromUtf8).decode(exceptionFrame('modelTimeoutException', '{"type":"gateway_timeout"}'));
    assert.equal(message.headers[':message-type']?.value, 'exception');
    assert.equal(message.headers[':exception-type']?.value, 'modelTimeoutException');
    assert.equal(toUtf8(message.body), '{"type":"gateway_timeout"}');
  });
});
