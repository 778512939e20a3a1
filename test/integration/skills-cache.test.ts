import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startEchoVendor, type EchoVendor } from '../fakes/echo.js';
import { redisValues, startTestGateway, tenants, type TestGateway } from '../helpers/gateway.js';
import { startGatewayBehindProxy, type RedisProxy } from '../helpers/redis-proxy.js';
import { callHeld, callSurface, durableRow, echoEnv, metricValue, SKILL_SURFACES, type SkillSurface } from '../helpers/skill-surfaces.js';
import { eventually } from '../helpers/wait.js';

/**
 * semantic_cache through the real gateway, its pool threads and a real Redis
 * shared by two replicas, every upstream an echo vendor: a repeated request
 * is answered from the cache on every surface that parses a body, whole or
 * replayed as a stream, with nothing sent upstream; entries never cross
 * orgs; shadow relays every call and measures false hits; PII values never
 * reach the store; a store that does not answer relays the call.
 */

const { bootstrap: BOOTSTRAP, keys } = tenants('acme', 'globex');
const ACME = keys['acme'] as string;
const GLOBEX = keys['globex'] as string;

const PROD = { 'x-gw-skills': 'semantic_cache=prod' };
const SHADOW = { 'x-gw-skills': 'semantic_cache=shadow' };
const LOOKED_UP_HIT = 'gw_cache_lookups_total{result="hit"}';
const LOOKED_UP_MISS = 'gw_cache_lookups_total{result="miss"}';

let unique = 0;
/** a prompt no other case asks */
const prompt = (what: string) => `Case ${++unique}: ${what}`;

interface Row {
  request: { cost_usd: number; tokens_saved: number; cache_tier: string | null; skills: Record<string, { arm: string; outcome: string; detail?: Record<string, unknown> }> };
  decision: { served_by: string; cache: { result: string; similarity?: number } };
}

const rowOf = (gw: TestGateway, key: string, id: string) => durableRow<Row>(gw, key, id);

describe('semantic_cache on every surface that parses a body, in Redis shared by two replicas', () => {
  let echo: EchoVendor;
  let a: TestGateway;
  let b: TestGateway;

  before(async () => {
    echo = await startEchoVendor();
    a = await startTestGateway({ bootstrap: BOOTSTRAP, redis: true, env: echoEnv(echo) });
    b = await startTestGateway({ bootstrap: BOOTSTRAP, redisPrefix: a.redisPrefix, env: echoEnv(echo) });
  });
  after(async () => {
    await b.close();
    await a.close();
    await echo.close();
  });

  for (const s of SKILL_SURFACES) {
    for (const stream of [false, true]) {
      it(`${s.name}, ${stream ? 'streamed' : 'whole'}: a repeat is answered from the cache, nothing upstream, the same reply in the surface's format`, async () => {
        const text = prompt(`what is the capital of France? (${s.name})`);
        const first = await callSurface(a, echo, s, ACME, text, { stream, headers: PROD });
        assert.equal(first.status, 200, first.bytes.toString());
        assert.equal(first.headers.get('x-gw-skill-semantic-cache'), 'miss');
        assert.equal(first.headers.get('x-gw-served-by'), 'pipeline');
        assert.equal(first.upstream.length, 1);
        const again = await callSurface(a, echo, s, ACME, text, { stream, headers: PROD });
        assert.equal(again.status, 200, again.bytes.toString());
        assert.equal(again.headers.get('x-gw-skill-semantic-cache'), 'hit');
        assert.equal(again.headers.get('x-gw-served-by'), 'cache');
        assert.equal(again.upstream.length, 0, 'nothing went upstream');
        assert.equal(again.headers.get('content-type'), first.headers.get('content-type'));
        assert.equal(again.text, first.text);
        assert.equal(again.text, text);
      });
    }
  }

  it('the other replica answers from the entry the first stored (Redis shared), its row a hit with no cost and the tokens saved', async () => {
    const s = SKILL_SURFACES[0] as SkillSurface;
    const text = prompt('name three rivers of Europe');
    assert.equal((await callSurface(a, echo, s, ACME, text, { headers: PROD })).headers.get('x-gw-skill-semantic-cache'), 'miss');
    const hit = await callSurface(b, echo, s, ACME, text, { headers: { ...PROD, 'x-request-id': 'cache-replica-hit' } });
    assert.equal(hit.headers.get('x-gw-served-by'), 'cache');
    assert.equal(hit.upstream.length, 0);
    const row = await rowOf(b, ACME, 'cache-replica-hit');
    assert.equal(row.decision.served_by, 'cache');
    assert.deepEqual(row.decision.cache, { result: 'hit', similarity: 1 });
    assert.equal(row.request.cache_tier, 'exact');
    assert.equal(row.request.cost_usd, 0);
    // the echo vendor's usage: 12 prompt and 5 output tokens not spent again
    assert.equal(row.request.tokens_saved, 17);
  });

  it('entries never cross orgs: the same request from another org misses and goes upstream', async () => {
    const s = SKILL_SURFACES[0] as SkillSurface;
    const text = prompt('summarise the plot of Hamlet');
    await callSurface(a, echo, s, ACME, text, { headers: PROD });
    assert.equal((await callSurface(a, echo, s, ACME, text, { headers: PROD })).headers.get('x-gw-served-by'), 'cache');
    const other = await callSurface(a, echo, s, GLOBEX, text, { headers: PROD });
    assert.equal(other.headers.get('x-gw-skill-semantic-cache'), 'miss');
    assert.equal(other.headers.get('x-gw-served-by'), 'pipeline');
    assert.equal(other.upstream.length, 1);
  });

  it('a near duplicate of the last user turn hits; one that negates it or changes a number does not', async () => {
    const s = SKILL_SURFACES[0] as SkillSurface;
    const base = prompt('Plan a walking tour of the old town for 4 hours, avoiding crowded places and steep streets, with a lunch stop');
    await callSurface(a, echo, s, ACME, base, { headers: PROD });
    const near = await callSurface(a, echo, s, ACME, `${base}!`, { headers: PROD });
    assert.equal(near.headers.get('x-gw-skill-semantic-cache'), 'hit');
    const negated = await callSurface(a, echo, s, ACME, base.replace('avoiding', 'not avoiding'), { headers: PROD });
    assert.equal(negated.headers.get('x-gw-skill-semantic-cache'), 'miss');
    const number = await callSurface(a, echo, s, ACME, base.replace('4 hours', '5 hours'), { headers: PROD });
    assert.equal(number.headers.get('x-gw-skill-semantic-cache'), 'miss');
  });

  it('/v1/execute: a hit carries its own id and a trace that says it was served by the cache', async () => {
    const s = SKILL_SURFACES.find((x) => x.surface === 'execute') as SkillSurface;
    const text = prompt('define entropy in one line');
    const first = JSON.parse((await callSurface(a, echo, s, ACME, text, { headers: { ...PROD, 'x-request-id': 'exec-first' } })).bytes.toString());
    const hit = JSON.parse((await callSurface(a, echo, s, ACME, text, { headers: { ...PROD, 'x-request-id': 'exec-hit' } })).bytes.toString());
    assert.equal(first.id, 'exec-first');
    assert.equal(hit.id, 'exec-hit');
    assert.equal(hit.output.content, first.output.content);
    assert.equal(hit.trace.served_by, 'cache');
    assert.equal(hit.usage.cost_usd, 0);
    const entry = hit.trace.skills.find((e: { skill: string }) => e.skill === 'semantic_cache');
    assert.equal(entry.outcome, 'hit');
    assert.equal(entry.detail.match, 'exact');
  });

  it('shadow relays every call, stores as prod would, and records whether the stored reply matched the live one (the false-hit measure)', async () => {
    const s = SKILL_SURFACES[0] as SkillSurface;
    const text = prompt('what is two plus two?');
    const first = await callHeld(a, echo, s, ACME, text, LOOKED_UP_MISS, { headers: SHADOW });
    assert.equal(first.headers.get('x-gw-skill-semantic-cache'), 'shadow');
    assert.equal(first.upstream.length, 1);
    // shadow stores after the reply has ended: wait for the entry
    await eventually(() => storedHolding(a, text), 'the shadow entry');
    const matched = await metricValue(a, 'gw_cache_shadow_compared_total{matched="true"}');
    const same = await callHeld(a, echo, s, ACME, text, LOOKED_UP_HIT, { headers: { ...SHADOW, 'x-request-id': 'shadow-same' } });
    assert.equal(same.upstream.length, 1, 'relayed although it would have hit');
    assert.equal(same.headers.get('x-gw-served-by'), 'pipeline');
    assert.equal(await metricValue(a, 'gw_cache_shadow_compared_total{matched="true"}'), matched + 1);
    const sameRow = await rowOf(a, ACME, 'shadow-same');
    assert.equal(sameRow.request.skills['semantic_cache']?.detail?.['decision'], 'hit');
    assert.equal(sameRow.request.skills['semantic_cache']?.detail?.['false_hit'], false);
    // the vendor now answers otherwise: the stored reply would have been a false hit
    const falseHits = await metricValue(a, 'gw_cache_shadow_compared_total{matched="false"}');
    const changed = await callHeld(a, echo, s, ACME, text, LOOKED_UP_HIT, { headers: { ...SHADOW, 'x-fake-reply': 'Five.', 'x-request-id': 'shadow-changed' } });
    assert.equal(changed.text, 'Five.');
    assert.equal(await metricValue(a, 'gw_cache_shadow_compared_total{matched="false"}'), falseHits + 1);
    assert.equal((await rowOf(a, ACME, 'shadow-changed')).request.skills['semantic_cache']?.detail?.['false_hit'], true);
  });

  it('with pii_redaction acting, the store holds placeholders only, and a hit restores this request’s own values', async () => {
    const s = SKILL_SURFACES[0] as SkillSurface;
    const both = { 'x-gw-skills': 'semantic_cache=prod,pii_redaction=prod' };
    const ask = (email: string) => prompt(`Draft a short welcome note to ${email}.`).replace(/^Case \d+/, 'Case pii');
    const first = await callSurface(a, echo, s, ACME, ask('jane.doe@example.com'), { headers: both });
    assert.equal(first.text, ask('jane.doe@example.com'));
    const stored = [...(await redisValues(`${a.redisPrefix}cache:*`)).values()].map((v) => Buffer.from(v).toString()).join('\n');
    assert.ok(!stored.includes('jane.doe@example.com') && !decodedEntries(stored).includes('jane.doe@example.com'), 'the value reached the store');
    assert.ok(decodedEntries(stored).includes('[EMAIL_1]'));
    const other = await callSurface(a, echo, s, ACME, ask('max.mustermann@example.org'), { headers: both });
    assert.equal(other.headers.get('x-gw-served-by'), 'cache');
    assert.equal(other.upstream.length, 0);
    assert.equal(other.text, ask('max.mustermann@example.org'));
  });

  it('with pii_redaction acting and the cache in shadow, what shadow stores holds placeholders only', async () => {
    const s = SKILL_SURFACES[0] as SkillSurface;
    const text = prompt('Remind erika.musterfrau@example.net about the meeting.');
    const r = await callHeld(a, echo, s, ACME, text, LOOKED_UP_MISS, { headers: { 'x-gw-skills': 'semantic_cache=shadow,pii_redaction=prod' } });
    assert.equal(r.text, text);
    const stored = text.replace('erika.musterfrau@example.net', '[EMAIL_1]');
    await eventually(() => storedHolding(a, stored), 'the shadow entry');
    assert.ok(!(await storedHolding(a, 'erika.musterfrau@example.net')), 'the value reached the store');
  });
});

/** the reply bytes inside the store's entries (base64 in their JSON), as text */
function decodedEntries(raw: string): string {
  return [...raw.matchAll(/"(?:b|e)":(?:"([A-Za-z0-9+/=]+)"|\[([^\]]*)\])/g)]
    .flatMap((m) => (m[1] !== undefined ? [m[1]] : (m[2] ?? '').split(',').map((x) => x.replaceAll('"', ''))))
    .map((b64) => Buffer.from(b64, 'base64').toString('utf8'))
    .join('\n');
}

/** some stored entry's reply says `text` back */
async function storedHolding(gw: TestGateway, text: string): Promise<boolean> {
  const raw = [...(await redisValues(`${gw.redisPrefix}cache:*:e:*`)).values()].join('\n');
  return decodedEntries(raw).includes(text);
}

describe('semantic_cache: a store that does not answer', () => {
  let echo: EchoVendor;
  let behind: Awaited<ReturnType<typeof startGatewayBehindProxy>>;
  let gw: TestGateway;
  let proxy: RedisProxy;

  before(async () => {
    echo = await startEchoVendor();
    behind = await startGatewayBehindProxy(BOOTSTRAP, echoEnv(echo));
    ({ gw, proxy } = behind);
  });
  after(async () => {
    await behind.close();
    await echo.close();
  });

  it('relays the call with a miss (lookup error), never an error, and counts it', async () => {
    const s = SKILL_SURFACES[0] as SkillSurface;
    const errors = await metricValue(gw, 'gw_cache_lookups_total{result="error"}');
    // the cache's exact-key read is its first command: from there on the store is silent
    proxy.hangOnCommand('get');
    const r = await callSurface(gw, echo, s, ACME, prompt('is the store there?'), { headers: PROD });
    proxy.resume();
    assert.equal(r.status, 200, r.bytes.toString());
    assert.equal(r.headers.get('x-gw-skill-semantic-cache'), 'miss');
    assert.equal(r.headers.get('x-gw-served-by'), 'pipeline');
    assert.equal(r.upstream.length, 1);
    assert.equal(await metricValue(gw, 'gw_cache_lookups_total{result="error"}'), errors + 1);
  });
});
