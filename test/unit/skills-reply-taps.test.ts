import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HeaderList, ResponseMeta, ResponseSink } from '../../src/http/types.js';
import type { SkillInput, SkillReports } from '../../src/pipeline/types.js';
import { cacheHalf } from '../../src/skills/cache/half.js';
import { cacheKeysOf } from '../../src/skills/cache/index.js';
import { SemanticCache } from '../../src/skills/cache/lookup.js';
import { RecordingSink } from '../../src/skills/cache/recording-sink.js';
import { stageContext } from '../../src/skills/context.js';
import { piiHalf } from '../../src/skills/pii/tap.js';
import type { StageCacheKeys, StageResult } from '../../src/skills/stage.js';
import { EmbeddedCacheStore } from '../../src/stores/embedded/cache-store.js';

/** A sink that keeps what it was given, in order. */
class Kept implements ResponseSink {
  aborted = false;
  started = false;
  readonly extraHeaders: HeaderList = [];
  readonly meta: ResponseMeta = {};
  status = 0;
  headers: HeaderList = [];
  readonly out: Buffer[] = [];
  ended = false;
  failed: unknown;

  send(status: number, headers: HeaderList, body: Uint8Array | string): void {
    this.started = true;
    this.status = status;
    this.headers = headers;
    this.out.push(Buffer.from(body));
    this.ended = true;
  }
  start(status: number, headers: HeaderList): void {
    this.started = true;
    this.status = status;
    this.headers = headers;
  }
  write(chunk: Uint8Array | string): boolean {
    this.out.push(Buffer.from(chunk));
    return true;
  }
  onDrain(): void {}
  end(chunk?: Uint8Array | string): void {
    if (chunk !== undefined) this.out.push(Buffer.from(chunk));
    this.ended = true;
  }
  fail(err: unknown): void {
    this.failed = err;
  }
  onAbort(): void {}
  shortenDeadline(): void {}

  get text(): string {
    return Buffer.concat(this.out).toString('utf8');
  }
}

const JSON_TYPE: HeaderList = [['content-type', 'application/json']];
const SSE: HeaderList = [['content-type', 'text/event-stream']];
const chunk = (content: string) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;

describe('pii_redaction reply tap', () => {
  const restored = { restore: { '[EMAIL_1]': 'jane@example.com' }, outcome: 'applied' } as StageResult;

  it('shadow has no half (nothing was replaced); acting without values has no tap', () => {
    assert.equal(piiHalf('chat_completions', false), undefined);
    const half = piiHalf('chat_completions', true)!;
    half.finish({ outcome: 'skipped' }, undefined);
    assert.equal(half.tap, undefined);
  });

  it('restores a whole JSON reply, the value JSON-escaped', () => {
    const half = piiHalf('chat_completions', true)!;
    half.finish({ ...restored, restore: { '[EMAIL_1]': 'a"b@example.com' } }, undefined);
    const sink = new Kept();
    half.tap!.wrap(sink).send(200, JSON_TYPE, JSON.stringify({ choices: [{ message: { content: 'Mail [EMAIL_1] now' } }] }));
    assert.equal(JSON.parse(sink.text).choices[0].message.content, 'Mail a"b@example.com now');
  });

  it('restores a placeholder split across stream chunks whole, and lets the rest through', () => {
    const half = piiHalf('chat_completions', true)!;
    half.finish(restored, undefined);
    const sink = new Kept();
    const tapped = half.tap!.wrap(sink);
    tapped.start(200, SSE);
    for (const piece of ['Mail [EM', 'AIL', '_1] now']) assert.equal(tapped.write(chunk(piece)), true);
    tapped.end('data: [DONE]\n\n');
    const text = sink.text
      .split('\n\n')
      .filter((b) => b.startsWith('data: {'))
      .map((b) => JSON.parse(b.slice(6)).choices[0].delta.content)
      .join('');
    assert.equal(text, 'Mail jane@example.com now');
    assert.ok(sink.text.endsWith('data: [DONE]\n\n'));
  });
});

describe('RecordingSink', () => {
  it('holds a whole reply until released, and keeps it', () => {
    const sink = new Kept();
    const rec = new RecordingSink(sink, 1024, true);
    rec.send(200, JSON_TYPE, '{"a":1}');
    assert.equal(sink.ended, false, 'held');
    assert.deepEqual(rec.reply({ input_tokens: 1, output_tokens: 2 }), { status: 200, contentType: 'application/json', body: Buffer.from('{"a":1}'), usage: { input_tokens: 1, output_tokens: 2 } });
    rec.release();
    assert.equal(sink.text, '{"a":1}');
  });

  it("keeps a stream's events, holds only its end; keeps nothing of a non-2xx or a failed reply", () => {
    const sink = new Kept();
    const rec = new RecordingSink(sink, 1024, true);
    rec.start(200, SSE);
    rec.write(`${chunk('a')}${chunk('b').slice(0, 10)}`);
    rec.write(chunk('b').slice(10));
    rec.end('data: [DONE]\n\n');
    assert.equal(sink.ended, false);
    assert.equal(rec.reply(undefined)?.events?.length, 3);
    rec.release();
    assert.equal(sink.ended, true);

    const err = new RecordingSink(new Kept(), 1024, false);
    err.send(500, JSON_TYPE, '{}');
    assert.equal(err.reply(undefined), undefined);
    const failed = new RecordingSink(new Kept(), 1024, false);
    failed.start(200, SSE);
    failed.write(chunk('a'));
    failed.fail(new Error('cut'));
    assert.equal(failed.reply(undefined), undefined);
  });
});

/** A chat request as the skills stage sees it, enough for the cache's half. */
const input = (org: string, model = 'gpt-4o', path = '/v1/chat/completions'): SkillInput =>
  ({ req: { path }, call: { org: { org_id: org }, provider: 'openai', model } }) as unknown as SkillInput;

const keysOf = (text: string): StageCacheKeys => cacheKeysOf('chat_completions', { model: 'gpt-4o', messages: [{ role: 'user', content: text }] }) as StageCacheKeys;
const computed = (text: string): StageResult => ({ outcome: 'applied', cache: keysOf(text) });
const reports = (): SkillReports => ({ list: [{ skill: 'semantic_cache', mode: 'shadow', arm: 'shadow', outcome: 'shadow', ms: 1, detail: { decision: 'hit' } }] });

describe('semantic_cache main-thread half', () => {
  const cache = () => new SemanticCache(new EmbeddedCacheStore({ maxEntries: 10, maxBytes: 1 << 20, ttlMs: 60_000 }), { similarity: 0.95, maxBytes: 1 << 20 });

  it('acting: a miss taps the reply and stores it when it has ended; the same request then hits with the stored bytes, in its org only', async () => {
    const c = cache();
    const miss = cacheHalf(c, input('acme'), true);
    assert.deepEqual(await miss.finish(computed('hello there'), 'gpt-4o'), { outcome: 'miss', detail: {} });
    const sink = new Kept();
    miss.tap!.wrap(sink).send(200, JSON_TYPE, '{"answer":42}');
    assert.equal(sink.ended, false, 'the last write waits for the store');
    miss.tap!.ended!({ status: 200, usage: { input_tokens: 12, output_tokens: 5, cached_tokens: 0 } }, reports());
    await new Promise((r) => setImmediate(r));
    assert.equal(sink.text, '{"answer":42}');

    const hit = await cacheHalf(c, input('acme'), true).finish(computed('hello there'), 'gpt-4o');
    assert.equal(hit?.outcome, 'hit');
    assert.deepEqual(hit?.answer && 'body' in hit.answer && Buffer.from(hit.answer.body).toString(), '{"answer":42}');
    assert.equal(hit?.answer?.replayed, true);
    assert.equal(hit?.detail?.['tokens_saved'], 17);
    assert.equal(hit?.detail?.['match'], 'exact');
    assert.equal((await cacheHalf(c, input('globex'), true).finish(computed('hello there'), 'gpt-4o'))?.outcome, 'miss');
    // another model (a routed call) is another scope
    assert.equal((await cacheHalf(c, input('acme'), true).finish(computed('hello there'), 'gpt-4o-mini'))?.outcome, 'miss');
  });

  it('a stream flag in the path is part of the scope', async () => {
    const c = cache();
    const gen = (path: string) => ({ req: { path }, call: { org: { org_id: 'acme' }, provider: 'genvendor', model: 'gemini-2.5-flash' } }) as unknown as SkillInput;
    const whole = cacheHalf(c, gen('/genvendor/v1beta/models/gemini-2.5-flash:generateContent'), true);
    await whole.finish(computed('hi'), 'gemini-2.5-flash');
    whole.tap!.wrap(new Kept()).send(200, JSON_TYPE, '{}');
    whole.tap!.ended!({ status: 200, usage: undefined }, reports());
    await new Promise((r) => setImmediate(r));
    assert.equal((await cacheHalf(c, gen('/genvendor/v1beta/models/gemini-2.5-flash:generateContent'), true).finish(computed('hi'), 'gemini-2.5-flash'))?.outcome, 'hit');
    assert.equal((await cacheHalf(c, gen('/genvendor/v1beta/models/gemini-2.5-flash:streamGenerateContent'), true).finish(computed('hi'), 'gemini-2.5-flash'))?.outcome, 'miss');
  });

  it('shadow: taps before the lookup, stores a would-be miss, and marks a would-be hit whose live reply differs as a false hit', async () => {
    const c = cache();
    const first = cacheHalf(c, input('acme'), false);
    assert.ok(first.tap, 'tapped before it runs');
    first.tap.wrap(new Kept()).send(200, JSON_TYPE, '{"content":"four"}');
    assert.equal((await first.finish(computed('two plus two?'), 'gpt-4o'))?.outcome, 'miss');
    first.tap.ended!({ status: 200, usage: undefined }, reports());
    await new Promise((r) => setImmediate(r));

    const same = cacheHalf(c, input('acme'), false);
    assert.equal((await same.finish(computed('two plus two?'), 'gpt-4o'))?.outcome, 'hit');
    same.tap!.wrap(new Kept()).send(200, JSON_TYPE, '{"content":"four"}');
    const r1 = reports();
    same.tap!.ended!({ status: 200, usage: undefined }, r1);
    assert.equal(r1.list[0]?.detail?.['false_hit'], false);

    const changed = cacheHalf(c, input('acme'), false);
    await changed.finish(computed('two plus two?'), 'gpt-4o');
    changed.tap!.wrap(new Kept()).send(200, JSON_TYPE, '{"content":"five"}');
    const r2 = reports();
    changed.tap!.ended!({ status: 200, usage: undefined }, r2);
    assert.equal(r2.list[0]?.detail?.['false_hit'], true);
  });
});

describe('stageContext', () => {
  const sources = {
    allowedModels: (org: string) => (org === 'acme' ? ['gpt-4o'] : null),
    storedProviders: () => ['msgvendor'],
    selfHosted: [],
    foldParams: () => ({ keep_recent_turns: 2 }),
  };
  const of = (org: string, vendorKey: string | undefined) =>
    ({ call: { org: { org_id: org }, key: { key_id: 'k' }, provider: 'openai', model: 'gpt-4o' }, presented: { vendorKey } }) as unknown as SkillInput;

  it("reaches a stored key's provider, and the call's own only with a key passed through; allowed models only when the org limits them", () => {
    assert.deepEqual(stageContext(sources, of('acme', 'sk-x')), { allowedModels: ['gpt-4o'], reachableProviders: ['msgvendor', 'openai'], model: 'gpt-4o', foldParams: { keep_recent_turns: 2 } });
    assert.deepEqual(stageContext(sources, of('globex', undefined)), { reachableProviders: ['msgvendor'], model: 'gpt-4o', foldParams: { keep_recent_turns: 2 } });
  });
});
