import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DiscardedText, JsonText, jsonWithArray, TurnWriter } from '../../src/translate/chat/body-writer.js';

type Turn = { role: 'user' | 'assistant'; blocks: Array<{ block: unknown; leading?: boolean }> };

/** the turns through a TurnWriter, as the body's bytes */
function written(turns: readonly Turn[], sizeHint: number, head: Record<string, unknown> = { model: 'm' }, tail: Record<string, unknown> = { stream: true }): string {
  return jsonWithArray(
    head,
    'messages',
    (out) => {
      const w = new TurnWriter<Turn['role']>(out, 'content');
      for (const t of turns) {
        w.message(t.role);
        for (const b of t.blocks) w.block(b.block, b.leading);
      }
      w.end();
    },
    tail,
    new JsonText(sizeHint),
  ).toString('utf8');
}

const text = (s: string) => ({ block: { type: 'text', text: s } });

describe('translated body writer', () => {
  it('writes head, the array and tail as JSON.stringify of the whole object would', () => {
    assert.equal(written([{ role: 'user', blocks: [text('hi')] }], 0), JSON.stringify({ model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], stream: true }));
    assert.equal(written([], 0, {}, {}), '{"messages":[]}');
    assert.equal(written([{ role: 'user', blocks: [text('a')] }], 0, {}, { x: 1 }), '{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"x":1}');
  });

  it('joins consecutive messages of one role, drops a turn without blocks, and puts leading blocks first', () => {
    const turns: Turn[] = [
      { role: 'user', blocks: [text('a')] },
      { role: 'user', blocks: [text('b'), { block: { type: 'tool_result', id: 1 }, leading: true }] },
      { role: 'assistant', blocks: [] },
      { role: 'user', blocks: [text('c')] },
    ];
    const body = JSON.parse(written(turns, 0)) as { messages: unknown[] };
    assert.deepEqual(body.messages, [
      { role: 'user', content: [{ type: 'tool_result', id: 1 }, { type: 'text', text: 'a' }, { type: 'text', text: 'b' }] },
      // the empty assistant turn still ends the user turn, as before, and is left out
      { role: 'user', content: [{ type: 'text', text: 'c' }] },
    ]);
  });

  it('gives the same bytes whatever the size hint, for turns and bodies far larger than one packed piece', () => {
    const long = Array.from({ length: 9000 }, (_, i) => ({ block: { type: 'text', text: `é—${'x'.repeat(i % 97)}😀${i}` }, leading: i % 11 === 0 }));
    const turns: Turn[] = [
      { role: 'user', blocks: long },
      ...Array.from({ length: 9000 }, (_, i): Turn => ({ role: i % 2 === 0 ? 'assistant' : 'user', blocks: [text(`turn ${i} ünïcödé`)] })),
    ];
    const expected = JSON.stringify({
      model: 'm',
      messages: [
        { role: 'user', content: [...long.filter((b) => b.leading), ...long.filter((b) => !b.leading)].map((b) => b.block) },
        ...turns.slice(1).map((t) => ({ role: t.role, content: t.blocks.map((b) => b.block) })),
      ],
      stream: true,
    });
    assert.ok(Buffer.byteLength(expected) > 1024 * 1024, 'the body outgrows a buffer added when the first is full');
    for (const hint of [0, 100, Buffer.byteLength(expected), 10 * 1024 * 1024]) assert.equal(written(turns, hint), expected, `size hint ${hint}`);
  });
});

describe('discarded text', () => {
  it('holds nothing, the turns being joined included, and finishes as an empty body', () => {
    const out = new DiscardedText();
    const body = jsonWithArray(
      { model: 'm' },
      'messages',
      (text) => {
        const w = new TurnWriter<'user'>(text, 'content');
        w.message('user');
        for (let i = 0; i < 1000; i++) w.block({ type: 'text', text: 'x'.repeat(100) }, i % 2 === 0);
        w.end();
      },
      {},
      out,
    );
    assert.equal(body.length, 0);
    assert.ok(out.empty);
    assert.ok(out.blank() instanceof DiscardedText, 'a turn joined beside it is discarded too');
  });
});
