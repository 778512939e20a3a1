import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { cacheKeysOf } from '../../src/skills/cache/index.js';
import type { NearSignature, StageCacheKeys } from '../../src/skills/stage.js';
import { conversationOf } from '../../src/skills/cache/conversation.js';
import { BANDS, PERMUTATIONS, VECTOR_DIM, invariantsOf, signatureOf, similarity, wordsOf } from '../../src/skills/cache/signature.js';
import { OTHER_REQUEST, SAME_REQUEST, TRIP, UNRELATED } from '../fixtures/cache/texts.js';

const THRESHOLD = 0.95;
const CONTEXT = { scope: 'scope', preceding: 'preceding' };
function sig(text: string, context = CONTEXT): NearSignature {
  const s = signatureOf(text, context);
  assert.ok(typeof s === 'object', 'a signature');
  return s;
}

/** The keys of a body, asserting it has a conversation. */
function keysOf(surface: string, body: unknown): StageCacheKeys {
  const keys = cacheKeysOf(surface, body);
  assert.ok(typeof keys === 'object', 'cache keys');
  return keys;
}
const sharedBands = (a: string[], b: string[]) => a.filter((x, i) => x === b[i]).length;

describe('near-duplicate signature and similarity', () => {
  it('is fixed-size whatever the text length', () => {
    for (const text of ['hi', TRIP.repeat(20)]) {
      const s = sig(text);
      assert.equal(s.minhash.length, PERMUTATIONS);
      assert.equal(s.vector.length, VECTOR_DIM);
      assert.equal(s.bands.length, BANDS);
    }
  });

  for (const [name, text] of Object.entries(SAME_REQUEST)) {
    it(`a near duplicate (${name}) reaches the threshold, keeps the invariants and shares an LSH band`, () => {
      const a = sig(TRIP);
      const b = sig(text);
      assert.ok(similarity(a, b) >= THRESHOLD, `similarity ${similarity(a, b)}`);
      assert.equal(b.invariants, a.invariants);
      assert.ok(sharedBands(a.bands, b.bands) > 0, 'found as a candidate');
    });
  }

  for (const [name, text] of Object.entries(OTHER_REQUEST)) {
    it(`${name} is as similar as a near duplicate, but its invariants differ, so it is never a candidate`, () => {
      const a = sig(TRIP);
      const b = sig(text);
      // the words alone would hit: the invariants are what keep it apart
      assert.ok(similarity(a, b) >= THRESHOLD, `similarity ${similarity(a, b)}`);
      assert.notEqual(b.invariants, a.invariants);
      assert.equal(sharedBands(a.bands, b.bands), 0);
    });
  }

  it('estimates the shingles\' Jaccard index in every position, short texts included (no position left empty)', () => {
    const words = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `w${from + i}`).join(' ');
    // 98 shingles each, 88 shared: Jaccard 88 / 108
    const a = sig(words(0, 100));
    const b = sig(words(10, 110));
    const jaccard = [...a.minhash].filter((v, i) => v === b.minhash[i]).length / PERMUTATIONS;
    assert.ok(Math.abs(jaccard - 88 / 108) < 0.1, `Jaccard estimate ${jaccard}`);
    for (const text of ['hi', 'hello there', 'one two three four']) {
      assert.ok(sig(text).minhash.every((v) => v !== 0xffffffff), `${text}: every position filled`);
      assert.deepEqual([...sig(text).minhash], [...sig(text).minhash]);
    }
  });

  it('is the signature earlier builds stored, so their entries still match (short texts, where most positions borrow a value, included)', () => {
    // digests of the MinHash positions and band keys, and of the trigram vector, as earlier builds computed them
    const earlier: Record<string, [string, string]> = {
      hi: ['44ddac027f086b0d', 'ca3cc558b6c63e62'],
      'Say hello.': ['8150c7e0aebeda29', '6e3ce01a95d0b7e4'],
      'What is the weather in Paris today?': ['dd207f94609064b7', 'a1b434a022ea6b4c'],
      'one two three four five six seven eight nine ten eleven twelve': ['266b38dd1b41d2ff', '11eba4d3288eb162'],
    };
    const digestOf = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 16);
    for (const [text, expected] of Object.entries(earlier)) {
      const s = sig(text);
      assert.deepEqual([digestOf(`${[...s.minhash].join('.')}|${s.bands.join('.')}`), digestOf([...s.vector].join('.'))], expected, text);
    }
  });

  it('building a long signature stops when its deadline has passed', () => {
    assert.equal(signatureOf(TRIP.repeat(40), CONTEXT, () => true), 'expired');
    assert.equal(signatureOf('?!', CONTEXT), 'none');
  });

  it('an unrelated prompt is far below the threshold', () => {
    assert.ok(similarity(sig(TRIP), sig(UNRELATED)) < 0.2);
    assert.ok(similarity(sig('What is the capital of France?'), sig('What is the capital of Spain?')) < THRESHOLD);
  });

  it('invariants: negations with counts, numbers in digits and words, entities but not sentence openers', () => {
    const text = "What isn't in the 2 boxes? Tell me why Alice has not opened one. The Box from Acme is 3.5 kg.";
    assert.deepEqual(invariantsOf(text, wordsOf(text)), { negations: 'isnt*1,not*1', numbers: '2*1,3.5*1,one*1', entities: 'Acme,Alice,Box' });
  });

  it('a signature depends on the preceding turns (band keys differ)', () => {
    const a = sig(TRIP);
    const b = sig(TRIP, { ...CONTEXT, preceding: 'other' });
    assert.equal(sharedBands(a.bands, b.bands), 0);
  });
});

describe('cache keys of each surface shape', () => {
  const system = 'You are a travel agent.';
  const bodies: Record<string, (text: string, temperature: number) => unknown> = {
    chat_completions: (t, temperature) => ({ model: 'gpt-x', temperature, messages: [{ role: 'system', content: system }, { role: 'user', content: t }] }),
    responses: (t, temperature) => ({ model: 'gpt-x', temperature, instructions: system, input: [{ role: 'user', content: [{ type: 'input_text', text: t }] }] }),
    messages: (t, temperature) => ({ model: 'm', max_tokens: 100, temperature, system, messages: [{ role: 'user', content: [{ type: 'text', text: t }] }] }),
    generate_content: (t, temperature) => ({ systemInstruction: { parts: [{ text: system }] }, generationConfig: { temperature }, contents: [{ role: 'user', parts: [{ text: t }] }] }),
    converse: (t, temperature) => ({ system: [{ text: system }], inferenceConfig: { temperature }, messages: [{ role: 'user', content: [{ text: t }] }] }),
    native: (t, temperature) => ({ input: { messages: [{ role: 'system', content: system }, { role: 'user', content: t }] }, execution: { temperature, timeout_ms: 1000 }, metadata: { session_id: 's' } }),
  };

  for (const [surface, body] of Object.entries(bodies)) {
    it(`${surface}: the last user turn is read, the scope follows the sampling parameters, bookkeeping is ignored`, () => {
      const keys = keysOf(surface, body(TRIP, 0));
      assert.ok(keys.near, 'a near-duplicate signature of the last user turn');
      const near = keysOf(surface, body(SAME_REQUEST['case, punctuation and spacing'] as string, 0));
      assert.ok(near.near);
      assert.notEqual(near.exact, keys.exact);
      assert.equal(near.near.preceding, keys.near.preceding);
      assert.ok(similarity(near.near, keys.near) >= THRESHOLD);
      assert.equal(keysOf(surface, body(TRIP, 0)).exact, keys.exact, 'deterministic');
      assert.notEqual(keysOf(surface, body(TRIP, 0.7)).scope, keys.scope, 'another temperature is another scope');
    });
  }

  it('the surface is part of the scope: the stored bytes are in its shape', () => {
    const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
    assert.notEqual(keysOf('cloudx', body)?.scope, keysOf('chat_completions', body).scope);
  });

  it('bookkeeping fields (user, metadata, stream) do not change the keys; whitespace does not change the exact key', () => {
    const a = keysOf('chat_completions', { model: 'm', messages: [{ role: 'user', content: 'Hello  there\n' }] });
    const b = keysOf('chat_completions', { model: 'm', user: 'u1', metadata: { a: 1 }, stream: true, messages: [{ role: 'user', content: 'Hello there' }] });
    assert.equal(a.exact, b.exact);
  });

  it('a changed system prompt or tool list is another scope', () => {
    const base = { model: 'm', system: 'a', messages: [{ role: 'user', content: 'hi' }] };
    const scope = keysOf('messages', base).scope;
    assert.notEqual(keysOf('messages', { ...base, system: 'b' }).scope, scope);
    assert.notEqual(keysOf('messages', { ...base, tools: [{ name: 't', input_schema: { type: 'object' } }] }).scope, scope);
  });

  it('a last turn that is not plain user text gets the exact key only', () => {
    const toolResult = keysOf('messages', { model: 'm', messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'ok' }] }] });
    assert.ok(toolResult.near === undefined);
    const image = keysOf('chat_completions', { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this' }, { type: 'image_url', image_url: { url: 'data:x' } }] }] });
    assert.ok(image.near === undefined);
  });

  it('a body that is not the surface shape has no conversation', () => {
    assert.equal(conversationOf('chat_completions', { prompt: 'x' }), undefined);
    assert.equal(conversationOf('count_tokens', { messages: [] }), undefined);
  });
});
