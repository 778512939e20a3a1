import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NOT_PEEKABLE, peekTopLevelString } from '../../src/http/json-peek.js';

const peek = (text: string) => peekTopLevelString(Buffer.from(text), 'model');

describe('peeking a top-level string without parsing the body', () => {
  it('agrees with JSON.parse on the top-level model, whatever the nesting and strings hold', () => {
    const bodies = [
      { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] },
      { messages: [{ role: 'user', content: 'the "model": "claude" is in a string' }], model: 'gpt-4o-mini' },
      { tools: [{ function: { parameters: { properties: { model: { type: 'string' } } } } }], model: 'o3' },
      { metadata: { model: 'nested-not-top' }, model: 'gpt-5' },
      { messages: [{ content: 'quote \\" and backslash \\\\ and \\u0022' }], model: 'gpt-4.1' },
      { messages: [{ content: 'ünïcødé 🙂 数据' }], model: 'gpt-4o' },
      { messages: [] },
      { model: 42 },
      { model: null },
      { model: { id: 'x' } },
      { model: ['a'] },
    ];
    for (const b of bodies) {
      const text = JSON.stringify(b);
      const parsed = (JSON.parse(text) as { model?: unknown }).model;
      assert.equal(peek(text), typeof parsed === 'string' ? parsed : undefined, text);
    }
  });

  it('takes the last of duplicate keys, as JSON.parse does', () => {
    assert.equal(peek('{"model":"a","x":1,"model":"b"}'), 'b');
    assert.equal(peek('{"model":"a","model":3}'), undefined);
  });

  it('tolerates whitespace around the structure', () => {
    assert.equal(peek(' \n{ "stream" : true ,\n "model"\t:\t"gpt-4o" }\n'), 'gpt-4o');
  });

  it('leaves what it cannot vouch for to the parser', () => {
    // an escaped key may be `model` itself: {"model":"gpt-4o-mini","mod\u0065l":"o3"} is o3 to JSON.parse
    for (const text of ['not json', '[{"model":"x"}]', '{"model":"gpt\\u002d4o"}', '{"model":"unterminated', '{"a":"b"', '', '{"model":"gpt-4o-mini","mod\\u0065l":"o3"}']) {
      assert.equal(peek(text), NOT_PEEKABLE, text);
    }
  });
});
