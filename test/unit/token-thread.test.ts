import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { countTokens as tokenizerCount } from 'gpt-tokenizer';
import { TokenThread } from '../../src/providers/usage/tokenizer.js';

const ROOT = new URL('../../', import.meta.url);
const reference = (text: string) => (text === '' ? 0 : tokenizerCount(text, { disallowedSpecial: new Set<string>() }));

/** a thread entry from source text (a data: URL), for threads that misbehave on purpose */
const entry = (code: string) => new URL(`data:text/javascript,${encodeURIComponent(code)}`);

/**
 * A thread that speaks the protocol but waits `ms` after taking each request
 * before it answers `count` (data: URLs cannot import the protocol module, so
 * its slots are spelled out: REQUESTED 0, PROGRESS 1, COUNT 2).
 */
const slowThread = (ms: number, count: number) =>
  entry(`
    import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
    const { shared, port } = workerData;
    const pause = new Int32Array(new SharedArrayBuffer(4));
    parentPort.postMessage('ready');
    let handled = 0;
    for (;;) {
      Atomics.wait(shared, 0, handled);
      handled = Atomics.load(shared, 0);
      for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) {
        Atomics.store(shared, 1, 2 * m.message.seq);
        Atomics.notify(shared, 1);
        Atomics.wait(pause, 0, 0, ${ms});
        Atomics.store(shared, 2, ${count});
        Atomics.store(shared, 1, 2 * m.message.seq + 1);
        Atomics.notify(shared, 1);
      }
    }
  `);

describe('the tokenizer thread', () => {
  const threads: TokenThread[] = [];
  const made = (thread: TokenThread) => (threads.push(thread), thread);
  after(() => Promise.all(threads.map((t) => t.stop())));

  it('counts what the tokenizer counts, special tokens as text, whatever the script', async () => {
    const thread = made(new TokenThread());
    await thread.start();
    const texts = ['', 'Say hello.', 'héllo wörld, 你好, مرحبا 🎉', 'a <|endoftext|> b <|im_start|>', JSON.stringify({ tools: [{ name: 'f', input: { x: [1, 2, 3] } }] }), 'word '.repeat(20_000)];
    for (const text of texts) assert.equal(thread.count(text), reference(text), text.slice(0, 40));
  });

  it('starts one thread for every gateway of a process: a second start while one runs is the same start', async () => {
    const thread = made(new TokenThread());
    const first = thread.start();
    assert.equal(thread.start(), first);
    await first;
    assert.equal(thread.count('one more'), reference('one more'));
  });

  it('counts without a start: the first count starts the thread and waits for its answer', () => {
    // 4242 is the fixture thread's own answer: a count made in place would be the text's 2
    const thread = made(new TokenThread({ entry: slowThread(0, 4242) }));
    assert.equal(thread.count('not started'), 4242);
  });

  it('waits for a count the thread took up, however long past the time it had to take it', async () => {
    const thread = made(new TokenThread({ entry: slowThread(3_000, 4242), takeMs: 2_000 }));
    await thread.start();
    // 4242 is the slow thread's own answer: a count made in place instead would be the text's 2
    assert.equal(thread.count('hello world'), 4242);
  });

  it('counts in place when the thread never takes the request up, and from then on, without starting another', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'token-thread-'));
    const starts = join(dir, 'starts');
    try {
      // it notes each start of its own in a file, says it is ready, and never takes a request
      const silent = entry(`
        import { appendFileSync } from 'node:fs';
        import { parentPort } from 'node:worker_threads';
        appendFileSync(${JSON.stringify(starts)}, 'started\\n');
        parentPort.postMessage('ready');
      `);
      const thread = made(new TokenThread({ entry: silent, takeMs: 200, firstTakeMs: 2_000 }));
      await thread.start();
      assert.equal(thread.count('hello there'), reference('hello there'));
      assert.equal(thread.count('and again'), reference('and again'));
      assert.equal(readFileSync(starts, 'utf8'), 'started\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a thread that cannot load fails the start with a plain message and its error, and counts are made in place', async () => {
    const thread = made(new TokenThread({ entry: entry(`throw new Error('no tokenizer here');`), firstTakeMs: 500 }));
    await assert.rejects(thread.start(), /the tokenizer thread exited \(code 1\) before its tokenizer loaded: no tokenizer here/);
    assert.equal(thread.count('still counted'), reference('still counted'));
  });

  it("keeps the tokenizer's ranks out of the calling thread's heap", () => {
    // a fresh process: what the count loads shows in its heap, not this test process's
    const script = `
      globalThis.gc(); globalThis.gc();
      const before = process.memoryUsage().heapUsed;
      const { countedUsage } = await import('${new URL('src/providers/usage/streamed-text.ts', ROOT).href}');
      const { tokenThread } = await import('${new URL('src/providers/usage/tokenizer.ts', ROOT).href}');
      await tokenThread.start();
      const usage = countedUsage({ text: 'the reply text', chars: 14 }, Buffer.from('{"messages":[{"role":"user","content":"hi"}]}'));
      globalThis.gc(); globalThis.gc();
      console.log(JSON.stringify({ grown: process.memoryUsage().heapUsed - before, usage }));
    `;
    const dir = mkdtempSync(join(tmpdir(), 'token-heap-'));
    const file = join(dir, 'count.mjs');
    writeFileSync(file, script);
    let out: string;
    try {
      out = execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', file], { cwd: ROOT, encoding: 'utf8' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const { grown, usage } = JSON.parse(out.trim().split('\n').at(-1) as string) as { grown: number; usage: { input_tokens: number; output_tokens: number } };
    assert.equal(usage.output_tokens, reference('the reply text'));
    assert.equal(usage.input_tokens, reference('{"messages":[{"role":"user","content":"hi"}]}'));
    // the ranks take about 20 MB of heap where they are loaded
    assert.ok(grown < 4 * 1024 * 1024, `the heap grew by ${(grown / 1024 / 1024).toFixed(1)} MB`);
  });
});
