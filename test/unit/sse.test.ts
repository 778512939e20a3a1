import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openai } from '../../src/providers/openai.js';
import { SseScanner } from '../../src/providers/sse.js';

const collect = (markers: string[], chunks: Buffer[]): string[] => {
  const seen: string[] = [];
  const scanner = new SseScanner(markers, (p) => seen.push(p));
  for (const c of chunks) scanner.push(c);
  return seen;
};

/** every way of cutting `text` into two chunks, plus one-byte chunks */
function splits(text: string): Buffer[][] {
  const bytes = Buffer.from(text);
  const out: Buffer[][] = [];
  for (let i = 0; i <= bytes.length; i++) out.push([bytes.subarray(0, i), bytes.subarray(i)]);
  out.push([...bytes].map((b) => Buffer.from([b])));
  return out;
}

describe('SseScanner', () => {
  const stream =
    ': comment\n' +
    'event: message\n' +
    'data: {"a":1}\n\n' +
    'data: {"usage":{"x":"ü"}}\r\n\r\n' +
    'id: 7\n' +
    'data: [DONE]\n\n';

  it('hands over data payloads carrying a marker, whatever the chunk boundaries', () => {
    for (const chunks of splits(stream)) {
      assert.deepEqual(collect(['"usage":{'], chunks), ['{"usage":{"x":"ü"}}']);
    }
  });

  it('strips the CR of CRLF lines and the space after data:', () => {
    assert.deepEqual(collect(['{'], [Buffer.from('data: {"k":"v"}\r\ndata:{"n":2}\n')]), ['{"k":"v"}', '{"n":2}']);
  });

  it('ignores other fields and lines that only mention data', () => {
    assert.deepEqual(collect(['x'], [Buffer.from('event: x\nid: x\nretry: 1\n: data: x\nxdata: x\n\n')]), []);
  });

  it('a line without its newline yet is held until the newline arrives', () => {
    const seen: string[] = [];
    const s = new SseScanner(['z'], (p) => seen.push(p));
    s.push(Buffer.from('data: z'));
    assert.deepEqual(seen, []);
    s.push(Buffer.from('z\n'));
    assert.deepEqual(seen, ['zz']);
  });

  it('a multi-byte character cut between chunks decodes whole', () => {
    const bytes = Buffer.from('data: {"usage":{"t":"日本"}}\n');
    const cut = bytes.indexOf(0xe6) + 1;
    assert.deepEqual(collect(['usage'], [bytes.subarray(0, cut), bytes.subarray(cut)]), ['{"usage":{"t":"日本"}}']);
  });
});

describe('openai stream usage', () => {
  const chunk = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;
  const text =
    chunk({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'usage":{ in text' } }] }) +
    chunk({ id: 'c', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16, prompt_tokens_details: { cached_tokens: 3 } } }) +
    'data: [DONE]\n\n';

  it('reads the final usage chunk across every chunk boundary', () => {
    for (const chunks of splits(text)) {
      const reader = openai.streamUsage();
      for (const c of chunks) reader.push(c);
      assert.deepEqual(reader.usage(), { input_tokens: 12, output_tokens: 4, cached_tokens: 3 });
    }
  });

  it('reports none when the stream carried none', () => {
    const reader = openai.streamUsage();
    reader.push(Buffer.from(chunk({ choices: [{ delta: { content: 'hi' } }] })));
    assert.equal(reader.usage(), undefined);
  });
});
