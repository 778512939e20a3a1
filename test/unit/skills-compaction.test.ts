import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { evaluatePromptCompaction } from '../../src/skills/compaction/index.js';
import { ELIDE_OVER_CHARS, minifyJson, segments } from '../../src/skills/compaction/passes.js';
import { VIEW_MAX_BYTES, viewOf } from '../../src/skills/views/index.js';
import { NO_DEADLINE, PASSED, stageInput } from '../helpers/stage-input.js';

const DOC = 'The quarterly report covers revenue, churn and hiring. '.repeat(8).trim();
const PRETTY = '{\n  "id": 7,\n  "price": 1.10,\n  "big": 12345678901234567890,\n  "tags": [\n    "a b",\n    "c"\n  ]\n}';

async function compact(surface: string, body: unknown) {
  const r = await evaluatePromptCompaction(stageInput('prompt_compaction', surface, body), NO_DEADLINE);
  return { r, out: r.change?.body ? (JSON.parse(Buffer.from(r.change.body).toString('utf8')) as Record<string, unknown>) : undefined };
}

describe('compaction passes', () => {
  test('JSON is minified outside strings only, numbers spelled as sent', () => {
    assert.equal(minifyJson(PRETTY), '{"id":7,"price":1.10,"big":12345678901234567890,"tags":["a b","c"]}');
    assert.equal(minifyJson('not { json'), undefined);
    assert.equal(minifyJson('"a string"'), undefined);
  });

  test('fenced code is a segment of its own, an unclosed fence runs to the end', () => {
    const segs = segments('a\n```py\nx  =  1\n\n\n\n```\nb\n```\nopen');
    assert.deepEqual(
      segs.map((s) => s.code),
      [false, true, false, true],
    );
    assert.equal(segs[1]!.text, '```py\nx  =  1\n\n\n\n```');
  });
});

describe('evaluatePromptCompaction', () => {
  test('whitespace, JSON and a repeated document: later copies become references, the last user turn stays as sent', async () => {
    const last = `Final question.   \n\n\n\n${DOC}`;
    const body = {
      model: 'gpt-4o',
      messages: [
        { role: 'system', content: `Rules.   \n\n\n\n${DOC}` },
        { role: 'user', content: `Read this:   \n\n\n\nsecond paragraph` },
        { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{ "a" : 1 }' } }] },
        { role: 'tool', tool_call_id: 'c', content: PRETTY },
        { role: 'assistant', content: `Here it is again:\n\n${DOC}` },
        { role: 'user', content: last },
      ],
    };
    const { r, out } = await compact('chat_completions', body);
    assert.equal(r.outcome, 'applied');
    const m = out!['messages'] as Array<{ content: string; tool_calls?: Array<{ function: { arguments: string } }> }>;
    assert.equal(m[0]!.content, body.messages[0]!.content, 'system instructions untouched');
    assert.equal(m[1]!.content, 'Read this:\n\nsecond paragraph');
    assert.equal(m[2]!.tool_calls![0]!.function.arguments, '{ "a" : 1 }', 'tool-call arguments untouched');
    assert.equal(m[3]!.content, minifyJson(PRETTY));
    assert.match(m[4]!.content, /^Here it is again:\n\n\[gateway: \d+ characters omitted, identical to the block first given in the system instructions\]$/);
    assert.equal(m[5]!.content, last, 'last user turn untouched even though it repeats the document');
    const d = r.detail as { tokens_saved: number; bytes_saved: number; passes: Record<string, number> };
    assert.ok(d.tokens_saved > 0 && d.bytes_saved > 0);
    assert.deepEqual(d.passes, { whitespace: 1, json: 1, repeat: 1, elide: 0 });
  });

  test('fenced code is never changed, even when repeated', async () => {
    const code = '```py\ndef f():\n\n\n\n    return   1   \n' + '# padding comment line\n'.repeat(20) + '```';
    const body = { model: 'm', messages: [{ role: 'user', content: code }, { role: 'assistant', content: `again\n\n${code}` }, { role: 'user', content: 'ok?' }] };
    const { r } = await compact('chat_completions', body);
    assert.equal(r.outcome, 'skipped');
  });

  test('an oversized tool output has its middle elided with a marker, except in the final turn', async () => {
    const lines = Array.from({ length: 2000 }, (_, i) => `line ${i} PASS`).join('\n');
    assert.ok(lines.length > ELIDE_OVER_CHARS);
    const body = {
      model: 'c',
      max_tokens: 9,
      messages: [
        { role: 'user', content: 'run the tests' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'run', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: lines }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't2', name: 'run', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't2', content: `${lines}\nrerun` }] },
      ],
    };
    const { r, out } = await compact('messages', body);
    const m = out!['messages'] as Array<{ content: Array<{ content?: string }> }>;
    const first = m[2]!.content[0]!.content!;
    assert.match(first, /^line 0 PASS\n[\s\S]*\[gateway: [\d,]+ characters \([\d,]+ lines\) of tool output elided from the middle\]\n[\s\S]*line 1999 PASS$/);
    assert.ok(first.length < 7_000);
    assert.equal(m[4]!.content[0]!.content, `${lines}\nrerun`, 'the final turn is what the model reads next');
    assert.equal((r.detail as { passes: Record<string, number> }).passes['elide'], 1);
  });

  test('nothing at or before a prompt-cache marker is touched (messages and converse)', async () => {
    const messy = `notes   \n\n\n\n${DOC}`;
    const anthropic = {
      model: 'c',
      max_tokens: 9,
      messages: [
        { role: 'user', content: [{ type: 'text', text: messy, cache_control: { type: 'ephemeral' } }] },
        { role: 'assistant', content: messy },
        { role: 'user', content: 'go' },
      ],
    };
    const a = await compact('messages', anthropic);
    const am = a.out!['messages'] as Array<{ content: unknown }>;
    assert.deepEqual(am[0]!.content, anthropic.messages[0]!.content);
    assert.match(am[1]!.content as string, /^notes\n\n\[gateway: /);
    const converse = {
      messages: [
        { role: 'user', content: [{ text: messy }, { cachePoint: { type: 'default' } }] },
        { role: 'assistant', content: [{ text: messy }, { cachePoint: { type: 'default' } }] },
        { role: 'user', content: [{ text: 'go' }] },
      ],
    };
    assert.equal((await compact('converse', converse)).r.outcome, 'skipped');
  });

  test('every shipped example conversation compacts into a valid body of its own shape with tokens saved', async () => {
    const dir = new URL('../fixtures/conversations/', import.meta.url);
    const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
    assert.ok(files.length >= 5);
    for (const file of files) {
      const { surface, body } = JSON.parse(readFileSync(new URL(file, dir), 'utf8')) as { surface: string; body: unknown };
      const { r, out } = await compact(surface, body);
      assert.equal(r.outcome, 'applied', file);
      assert.ok((r.detail as { tokens_saved: number }).tokens_saved > 0, file);
      const before = viewOf(surface, body)!.parts();
      const after = viewOf(surface, out)!.parts();
      assert.equal(after.length, before.length, file);
      // system parts and the last user turn come through unchanged
      const lastUser = Math.max(...before.filter((p) => p.kind === 'user').map((p) => p.turn));
      for (const p of before) if (p.kind === 'system' || p.turn === lastUser || p.cacheMarked) assert.equal(after[p.id]!.text, p.text, `${file} part ${p.id}`);
    }
  });

  test('no view, and a passed deadline', async () => {
    assert.equal((await compact('count_tokens', { messages: [] })).r.outcome, 'skipped');
    const r = await evaluatePromptCompaction(stageInput('prompt_compaction', 'chat_completions', { messages: [{ role: 'user', content: 'a' }] }), PASSED);
    assert.equal(r.outcome, 'ceiling_exceeded');
  });

  test('a body past the size a stage parses whole fails open, relayed as sent, with the reason', async () => {
    const turns = Array.from({ length: Math.ceil(VIEW_MAX_BYTES / 40) }, (_, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: 'spaced     out     text' }));
    const { r, out } = await compact('chat_completions', { messages: turns });
    assert.equal(r.outcome, 'ceiling_exceeded');
    assert.equal(out, undefined);
    assert.match(String(r.detail?.['reason']), /past the \d+ a stage parses whole/);
  });
});
