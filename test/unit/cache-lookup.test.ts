import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Deadline, type StageCacheKeys, type StageInput } from '../../src/skills/stage.js';
import { evaluateSemanticCache } from '../../src/skills/cache/index.js';
import { SemanticCache, type CacheRoute } from '../../src/skills/cache/lookup.js';
import { StreamRecorder, replayEvents, replyText } from '../../src/skills/cache/reply.js';
import type { CachedReply, CacheStore } from '../../src/stores/cache.js';
import { EmbeddedCacheStore } from '../../src/stores/embedded/cache-store.js';
import { RedisCacheStore } from '../../src/stores/redis/cache-store.js';
import type { RedisTarget } from '../../src/stores/redis/client.js';
import { redisKeys } from '../../src/stores/redis/prefixes.js';
import { createMetrics } from '../../src/telemetry/metrics.js';
import { dropRedisPrefix, newRedisPrefix, TEST_REDIS } from '../helpers/gateway.js';
import { startRedisProxy } from '../helpers/redis-proxy.js';
import { OTHER_REQUEST, SAME_REQUEST, TRIP } from '../fixtures/cache/texts.js';

const ROUTE: CacheRoute = { provider: 'openai', model: 'gpt-x', stream: false };
const SETTINGS = { similarity: 0.95, maxBytes: 1 << 24 };

/** A StageInput as the worker builds one, over a chat-completions body. */
function stageInput(body: unknown, surface = 'chat_completions', acting = true): StageInput {
  const bytes = Buffer.from(JSON.stringify(body));
  return { stage: 'semantic_cache', surface, acting, body: bytes, text: () => bytes.toString('utf8'), json: () => JSON.parse(bytes.toString('utf8')) };
}

const chat = (text: string, extra: object = {}) => ({ model: 'gpt-x', messages: [{ role: 'system', content: 'You plan trips.' }, { role: 'user', content: text }], ...extra });

function keysOf(body: unknown, surface = 'chat_completions'): StageCacheKeys {
  const result = evaluateSemanticCache(stageInput(body, surface), new Deadline(Date.now() + 60_000));
  assert.ok(!(result instanceof Promise));
  assert.equal(result.outcome, 'applied');
  assert.ok(result.cache);
  return result.cache;
}

const jsonReply = (content: string): CachedReply => ({
  status: 200,
  contentType: 'application/json',
  body: Buffer.from(JSON.stringify({ id: `chatcmpl-${content.length}`, choices: [{ index: 0, message: { role: 'assistant', content } }], usage: { prompt_tokens: 50, completion_tokens: 9 } })),
  usage: { input_tokens: 50, output_tokens: 9 },
});

const bodyText = (r: CachedReply | undefined) => Buffer.from(r?.body ?? []).toString('utf8');

function caches(store: CacheStore) {
  const metrics = createMetrics();
  return { cache: new SemanticCache(store, SETTINGS, metrics.semanticCache), metrics };
}

const counter = async (metrics: ReturnType<typeof createMetrics>, name: 'cacheLookups' | 'cacheShadowCompared', label: 'result' | 'matched', value: string) =>
  (await metrics[name].get()).values.find((v) => (v.labels as Record<string, string | number | undefined>)[label] === value)?.value ?? 0;

describe('semantic_cache evaluator, called directly', () => {
  it('computes the keys of a chat body; skips a body that is not JSON or has no conversation', () => {
    const keys = keysOf(chat(TRIP));
    assert.ok(keys.near);
    const deadline = new Deadline(Date.now() + 60_000);
    const notJson: StageInput = { ...stageInput({}), body: Buffer.from('{'), text: () => '{', json: () => JSON.parse('{') };
    assert.equal((evaluateSemanticCache(notJson, deadline) as { outcome: string }).outcome, 'skipped');
    assert.equal((evaluateSemanticCache(stageInput({ prompt: 'x' }), deadline) as { outcome: string }).outcome, 'skipped');
  });

  it('gives up once its deadline has passed', () => {
    assert.equal((evaluateSemanticCache(stageInput(chat(TRIP)), new Deadline(Date.now() - 1)) as { outcome: string }).outcome, 'ceiling_exceeded');
  });
});

describe('SemanticCache lookup and record (embedded store)', () => {
  const store = () => new EmbeddedCacheStore({ maxEntries: 100, maxBytes: 1 << 24, ttlMs: 3_600_000 });

  it('miss, record, then an exact hit with the stored bytes', async () => {
    const { cache, metrics } = caches(store());
    const first = await cache.lookup('org-a', ROUTE, keysOf(chat(TRIP)));
    assert.equal(first.kind, 'miss');
    assert.ok(first.kind === 'miss' && (await cache.record(first.recordKey, jsonReply('Day 1: Alfama.'))));
    const again = await cache.lookup('org-a', ROUTE, keysOf(chat(TRIP, { user: 'someone' })));
    assert.equal(again.kind, 'hit');
    assert.ok(again.kind === 'hit');
    assert.equal(again.match, 'exact');
    assert.equal(again.similarity, 1);
    assert.equal(bodyText(again.reply), bodyText(jsonReply('Day 1: Alfama.')));
    assert.equal(await counter(metrics, 'cacheLookups', 'result', 'hit'), 1);
  });

  for (const [name, text] of Object.entries(SAME_REQUEST)) {
    it(`a near duplicate (${name}) hits with its similarity`, async () => {
      const { cache } = caches(store());
      const first = await cache.lookup('org-a', ROUTE, keysOf(chat(TRIP)));
      assert.ok(first.kind === 'miss' && (await cache.record(first.recordKey, jsonReply('Day 1: Alfama.'))));
      const near = await cache.lookup('org-a', ROUTE, keysOf(chat(text)));
      assert.equal(near.kind, 'hit');
      assert.ok(near.kind === 'hit' && near.match === 'near' && near.similarity >= 0.95 && near.similarity < 1 + 1e-9);
    });
  }

  for (const [name, text] of Object.entries(OTHER_REQUEST)) {
    it(`${name} never hits`, async () => {
      const { cache } = caches(store());
      const first = await cache.lookup('org-a', ROUTE, keysOf(chat(TRIP)));
      assert.ok(first.kind === 'miss' && (await cache.record(first.recordKey, jsonReply('Day 1: Alfama.'))));
      assert.equal((await cache.lookup('org-a', ROUTE, keysOf(chat(text)))).kind, 'miss');
    });
  }

  it('scope: another org, provider, model, stream flag, system prompt or preceding turn misses', async () => {
    const { cache } = caches(store());
    const first = await cache.lookup('org-a', ROUTE, keysOf(chat(TRIP)));
    assert.ok(first.kind === 'miss' && (await cache.record(first.recordKey, jsonReply('Day 1: Alfama.'))));
    const keys = keysOf(chat(TRIP));
    const near = SAME_REQUEST['case, punctuation and spacing'] as string;
    assert.equal((await cache.lookup('org-b', ROUTE, keys)).kind, 'miss', 'entries never cross orgs');
    assert.equal((await cache.lookup('org-b', ROUTE, keysOf(chat(near)))).kind, 'miss', 'near duplicates never cross orgs');
    assert.equal((await cache.lookup('org-a', { ...ROUTE, provider: 'cloudx' }, keys)).kind, 'miss');
    assert.equal((await cache.lookup('org-a', { ...ROUTE, model: 'gpt-y' }, keys)).kind, 'miss');
    assert.equal((await cache.lookup('org-a', { ...ROUTE, stream: true }, keys)).kind, 'miss');
    const otherSystem = { model: 'gpt-x', messages: [{ role: 'system', content: 'You plan parties.' }, { role: 'user', content: near }] };
    assert.equal((await cache.lookup('org-a', ROUTE, keysOf(otherSystem))).kind, 'miss');
    const longer = { model: 'gpt-x', messages: [{ role: 'system', content: 'You plan trips.' }, { role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello' }, { role: 'user', content: near }] };
    assert.equal((await cache.lookup('org-a', ROUTE, keysOf(longer))).kind, 'miss', 'other preceding turns');
  });

  it('stores only complete 2xx replies, and none over a sixteenth of GW_CACHE_MAX_BYTES', async () => {
    const { cache } = caches(store());
    const miss = await cache.lookup('org-a', ROUTE, keysOf(chat('hello')));
    assert.ok(miss.kind === 'miss');
    assert.equal(await cache.record(miss.recordKey, { ...jsonReply('x'), status: 429 }), false);
    assert.equal(await cache.record(miss.recordKey, { status: 200, contentType: 'text/event-stream', events: [] }), false);
    const small = new SemanticCache(store(), { ...SETTINGS, maxBytes: 65_536 });
    assert.equal(await small.record(miss.recordKey, { ...jsonReply('x'), body: new Uint8Array(8192) }), false);
    assert.equal((await cache.lookup('org-a', ROUTE, keysOf(chat('hello')))).kind, 'miss');
  });

  it('a stream is recorded as its events and replayed event by event', async () => {
    const { cache } = caches(store());
    const route = { ...ROUTE, stream: true };
    const miss = await cache.lookup('org-a', route, keysOf(chat(TRIP)));
    assert.ok(miss.kind === 'miss');
    const wire = 'data: {"choices":[{"delta":{"content":"Day "}}]}\n\ndata: {"choices":[{"delta":{"content":"1"}}]}\n\ndata: [DONE]\n\n';
    const recorder = new StreamRecorder('text/event-stream', cache.maxEntryBytes);
    // chunks cut across event boundaries, as the network delivers them
    for (const cut of [wire.slice(0, 10), wire.slice(10, 60), wire.slice(60)]) recorder.push(Buffer.from(cut));
    const reply = recorder.finish(200);
    assert.ok(reply && (await cache.record(miss.recordKey, reply)));
    const hit = await cache.lookup('org-a', route, keysOf(chat(TRIP)));
    assert.ok(hit.kind === 'hit');
    const written: string[] = [];
    await replayEvents(hit.reply, (e) => void written.push(Buffer.from(e).toString('utf8')));
    assert.deepEqual(written, ['data: {"choices":[{"delta":{"content":"Day "}}]}\n\n', 'data: {"choices":[{"delta":{"content":"1"}}]}\n\n', 'data: [DONE]\n\n']);
    assert.equal(replyText(hit.reply), 'Day 1');
  });

  it('a stream past its bound is not recorded', () => {
    const recorder = new StreamRecorder('text/event-stream', 20);
    recorder.push(Buffer.from('data: {"a":"0123456789"}\n\n'));
    assert.equal(recorder.finish(200), undefined);
  });

  it('shadow: the live reply compared with the stored one gives the false-hit measure', async () => {
    const { cache, metrics } = caches(store());
    const stored = jsonReply('Day 1: Alfama.');
    assert.equal(cache.shadowCompare(stored, jsonReply('Day 1:  Alfama.')), true, 'same content, other id and spacing');
    assert.equal(cache.shadowCompare(stored, jsonReply('Day 1: Belém.')), false);
    assert.equal(await counter(metrics, 'cacheShadowCompared', 'matched', 'true'), 1);
    assert.equal(await counter(metrics, 'cacheShadowCompared', 'matched', 'false'), 1);
    // a streamed reply and the whole one carry the same content text
    const events = ['data: {"choices":[{"delta":{"content":"Day 1: "}}]}\n\n', 'data: {"choices":[{"delta":{"content":"Alfama."}}]}\n\n', 'data: [DONE]\n\n'];
    assert.equal(replyText({ status: 200, contentType: 'text/event-stream', events: events.map((e) => Buffer.from(e)) }), replyText(stored));
  });
});

describe('SemanticCache on Redis', () => {
  const prefix = newRedisPrefix();
  const stores: RedisCacheStore[] = [];
  after(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await dropRedisPrefix(prefix);
  });
  async function replica(target: RedisTarget = TEST_REDIS, boundMs?: number) {
    const store = new RedisCacheStore(target, redisKeys(prefix), { ttlMs: 60_000, commandTimeoutMs: 5_000 });
    await store.start();
    stores.push(store);
    const metrics = createMetrics();
    return { cache: new SemanticCache(store, { ...SETTINGS, ...(boundMs !== undefined && { boundMs }) }, metrics.semanticCache), metrics };
  }

  it('a reply one replica stored is a hit, exact and near, on another; never for another org', async () => {
    const { cache: one } = await replica();
    const { cache: two } = await replica();
    const miss = await one.lookup('org-r', ROUTE, keysOf(chat(TRIP)));
    assert.ok(miss.kind === 'miss' && (await one.record(miss.recordKey, jsonReply('Day 1: Alfama.'))));
    const exact = await two.lookup('org-r', ROUTE, keysOf(chat(TRIP)));
    assert.ok(exact.kind === 'hit' && exact.match === 'exact');
    assert.equal(bodyText(exact.reply), bodyText(jsonReply('Day 1: Alfama.')));
    const near = await two.lookup('org-r', ROUTE, keysOf(chat(SAME_REQUEST['one misspelt word'] as string)));
    assert.ok(near.kind === 'hit' && near.match === 'near');
    assert.equal((await two.lookup('org-other', ROUTE, keysOf(chat(TRIP)))).kind, 'miss');
  });

  it('a Redis that stops answering is a lookup error within the bound (the call is relayed), and recording gives up', async () => {
    const proxy = await startRedisProxy();
    after(() => proxy.close());
    const { cache, metrics } = await replica(proxy.url, 100);
    const keys = keysOf(chat(TRIP));
    assert.equal((await cache.lookup('org-s', ROUTE, keys)).kind, 'miss', 'answers while Redis does');
    proxy.hang();
    const stalled = await cache.lookup('org-s', ROUTE, keys);
    assert.equal(stalled.kind, 'error');
    assert.match(stalled.kind === 'error' ? stalled.reason : '', /did not answer within 100 ms/);
    assert.equal(await counter(metrics, 'cacheLookups', 'result', 'error'), 1);
    const miss = await (await replica()).cache.lookup('org-s', ROUTE, keys);
    assert.ok(miss.kind === 'miss');
    assert.equal(await cache.record(miss.recordKey, jsonReply('x')), false);
    proxy.resume();
  });

  it('a Redis that is away is a lookup error, never a thrown one', async () => {
    const { cache } = await replica('redis://127.0.0.1:1');
    assert.equal((await cache.lookup('org-s', ROUTE, keysOf(chat(TRIP)))).kind, 'error');
  });
});
