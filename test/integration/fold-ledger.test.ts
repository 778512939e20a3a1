import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { lookupModel } from '../../src/providers/catalog.js';
import { trueUpLedger, type CacheBill, type FoldLedger } from '../../src/skills/trajectory/ledger.js';
import type { DecisionRecord, RequestRow } from '../../src/telemetry/row.js';
import { startFakeAnthropic } from '../fakes/anthropic.js';
import { startFakeBedrock } from '../fakes/bedrock.js';
import { PLAIN_TOKENS } from '../fakes/cache-script.js';
import { startFakeOpenAI } from '../fakes/openai.js';
import type { FakeVendor } from '../fakes/server.js';
import { agentBody } from '../helpers/agent-conversation.js';
import { startTestGateway, tenants, type TestGateway } from '../helpers/gateway.js';
import { durableRow, metricValue } from '../helpers/skill-surfaces.js';

/**
 * agent_trajectory_compaction's dollar ledger trued up from the reply's cache
 * usage, through the real gateway (its pool threads, Redis-backed rows) to
 * the vendor fakes, which report cache reads and writes in their own wire
 * shape as the model name scripts them (test/fakes/cache-script.ts): the
 * durable row and the decision record carry the trued-up ledger with the
 * estimate beside it; /v1/execute's trace shows it too.
 */

type Json = Record<string, unknown>;
const FOLD = 'agent_trajectory_compaction';
const PROD = { 'x-gw-skills': `${FOLD}=prod` };
const BEDROCK_SONNET = 'anthropic.claude-sonnet-4-5-20250929-v1:0';
const SAVED_TRUED_UP = 'gw_skill_fold_ledger_usd_total{sign="saved",basis="trued_up"}';
const LOST_ESTIMATE = 'gw_skill_fold_ledger_usd_total{sign="lost",basis="estimate"}';

interface Row {
  request: RequestRow;
  decision: DecisionRecord;
}

/** the fold's full ledger as the decision record keeps it */
function ledgerIn(row: Row): FoldLedger {
  const s = row.decision.skills.find((x) => x.skill === FOLD);
  assert.ok(s?.detail, JSON.stringify(row.decision.skills));
  return (JSON.parse(s.detail) as Json)['ledger'] as FoldLedger;
}

/** the ledger the reply's bill trues the estimate up to, at `model`'s prices */
function expected(l: FoldLedger, bill: CacheBill, model: string): FoldLedger {
  const { estimate, reply: _reply, cache_write_tokens_added: _added, ...rest } = l;
  assert.ok(estimate, 'trued up ledgers keep the estimate');
  const entry = lookupModel(model)!;
  return trueUpLedger({ ...rest, ...estimate, trued_up: false }, bill, 'folded', entry.id, entry.price);
}

const close = (a: number, b: number, what: string) => assert.ok(Math.abs(a - b) < 1e-9, `${what}: ${a} ≠ ${b}`);

/** The row's figures agree with the full ledger; the estimate is kept beside it. */
function assertRowCarries(row: Row, l: FoldLedger): void {
  const figures = row.request.skills[FOLD]?.detail;
  assert.equal(figures?.ledger_trued_up, true);
  assert.equal(figures?.ledger_usd, l.net_usd);
  assert.equal(figures?.estimated_ledger_usd, l.estimate?.net_usd);
}

describe('the fold ledger trued up from the reply cache usage', () => {
  let openai: FakeVendor;
  let anthropic: FakeVendor;
  let bedrock: FakeVendor;
  let gw: TestGateway;
  const { bootstrap, keys } = tenants('fold-ledger');
  const devKey = keys['fold-ledger'] as string;
  let n = 0;
  const id = (tag: string) => `fold-ledger-${tag}-${++n}`;

  before(async () => {
    [openai, anthropic, bedrock] = await Promise.all([startFakeOpenAI(), startFakeAnthropic(), startFakeBedrock()]);
    gw = await startTestGateway({ bootstrap, redis: true, env: { GW_UPSTREAM_OPENAI: openai.origin, GW_UPSTREAM_MSGVENDOR: anthropic.origin, GW_UPSTREAM_CLOUDY: bedrock.origin } });
  });
  after(async () => {
    await gw.close();
    await Promise.all([openai.close(), anthropic.close(), bedrock.close()]);
  });

  async function post(path: string, headers: Record<string, string>, body: Json, requestId: string): Promise<Response> {
    const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': requestId, ...PROD, ...headers }, body: JSON.stringify(body) });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gw-skill-agent-trajectory-compaction'), 'applied');
    return res;
  }

  /** Sends a call the skill folds, reads its reply whole, and returns its row and the fold's ledger. */
  async function folded(tag: string, path: string, headers: Record<string, string>, body: Json): Promise<{ row: Row; l: FoldLedger }> {
    const requestId = id(tag);
    await (await post(path, headers, body, requestId)).arrayBuffer();
    const row = await durableRow<Row>(gw, devKey, requestId);
    return { row, l: ledgerIn(row) };
  }

  /** The ledger is the estimate trued up from the bill the fake reported, and the row carries it. */
  function assertTruedUp(row: Row, l: FoldLedger, bill: CacheBill, model: string): void {
    assert.equal(l.trued_up, true);
    assert.deepEqual(l.reply, bill);
    assert.deepEqual(l, expected(l, bill, model));
    assertRowCarries(row, l);
  }
  const chatHeaders = { authorization: `Bearer ${devKey}`, 'x-gw-provider-key': 'sk-upstream' };

  for (const stream of [false, true]) {
    it(`chat-completions${stream ? ', streamed' : ''}: the cache held the folded conversation, so only the folded tokens lose their discount`, async () => {
      const body = { ...agentBody('chat_completions', { model: 'gpt-4o-cache_5000_0' }), ...(stream && { stream: true, stream_options: { include_usage: true } }) };
      const saved = await metricValue(gw, SAVED_TRUED_UP);
      const { row, l } = await folded('chat', '/v1/chat/completions', chatHeaders, body);
      close(await metricValue(gw, SAVED_TRUED_UP), saved + l.net_usd, 'the metric counts the trued-up net');
      assertTruedUp(row, l, { input: PLAIN_TOKENS + 5000, read: 5000, written: 0 }, 'gpt-4o');
      // the read reached past the fold point: without the fold it would have been the folded tokens longer
      assert.equal(l.cached_tokens_lost, l.tokens_saved);
      close(l.net_usd, (l.tokens_saved * lookupModel('gpt-4o')!.price.cached_input) / 1e6, 'net at the cached price');
      assert.ok(l.estimate!.net_usd < 0 && l.net_usd > 0, 'the estimate said the fold lost money; the reply says it saved');
    });
  }

  it('chat-completions streamed without usage: the estimate stands, marked as such', async () => {
    const lost = await metricValue(gw, LOST_ESTIMATE);
    const { row, l } = await folded('chat-no-usage', '/v1/chat/completions', chatHeaders, { ...agentBody('chat_completions', { model: 'gpt-4o-cache_5000_0' }), stream: true });
    assert.ok(l.net_usd < 0);
    close(await metricValue(gw, LOST_ESTIMATE), lost - l.net_usd, 'the metric counts the estimate, under lost');
    assert.equal(l.trued_up, false);
    assert.equal(l.estimate, undefined);
    const figures = row.request.skills[FOLD]?.detail;
    assert.equal(figures?.ledger_trued_up, false);
    assert.equal(figures?.ledger_usd, l.net_usd);
    assert.equal(figures?.estimated_ledger_usd, l.net_usd);
  });

  for (const stream of [false, true]) {
    it(`messages${stream ? ', streamed' : ''}: the first fold writes the folded prefix anew at 1.25× input`, async () => {
      const body = { ...agentBody('messages', { model: 'claude-sonnet-4-5-cache_0_5000', marker: 'late' }), ...(stream && { stream: true }) };
      const { row, l } = await folded('messages', '/msgvendor/v1/messages', { 'x-api-key': devKey, 'x-gw-provider-key': 'sk-ant-upstream', 'anthropic-version': '2023-06-01' }, body);
      assertTruedUp(row, l, { input: PLAIN_TOKENS + 5000, read: 0, written: 5000 }, 'claude-sonnet-4-5');
      const p = lookupModel('claude-sonnet-4-5')!.price;
      assert.ok(l.cache_write_tokens_added! > 0);
      close(l.cache_loss_usd, (l.cached_tokens_lost * (p.input - p.cached_input) + l.cache_write_tokens_added! * (p.cache_write - p.input)) / 1e6, 'reads lost and writes added');
      assert.ok(l.net_usd < l.estimate!.net_usd, 'the write premium the estimate left out');
    });
  }

  for (const stream of [false, true]) {
    it(`converse${stream ? ', streamed' : ''}: the cache held the folded prefix; the same tail is written either way`, async () => {
      const path = `/cloudy/model/${encodeURIComponent(`${BEDROCK_SONNET}-cache_5000_400`)}/${stream ? 'converse-stream' : 'converse'}`;
      const { row, l } = await folded('converse', path, { authorization: `Bearer ${devKey}`, 'x-gw-provider-key': 'ABSKQmVkcm9ja0FQSUtleS1mYWtlLWtleQ==' }, agentBody('converse', { marker: 'late' }));
      assertTruedUp(row, l, { input: PLAIN_TOKENS + 5400, read: 5000, written: 400 }, BEDROCK_SONNET);
      assert.equal(l.model, BEDROCK_SONNET);
    });
  }

  for (const stream of [false, true]) {
    it(`/v1/execute${stream ? ', streamed' : ''}: the trace shows the trued-up ledger, the same as the row`, async () => {
      const requestId = id('execute');
      const body = { ...agentBody('execute', { model: 'gpt-4o-cache_5000_0' }), ...(stream && { execution: { stream: true } }) };
      const res = await post('/v1/execute', chatHeaders, body, requestId);
      const text = await res.text();
      const execution = stream ? (JSON.parse(/event: execution\.completed\ndata: (.*)\n/.exec(text)![1]!) as Json) : (JSON.parse(text) as Json);
      const skills = (execution['trace'] as Json)['skills'] as Json[];
      const traced = (skills.find((s) => s['skill'] === FOLD)!['detail'] as Json)['ledger'] as FoldLedger;
      assert.equal(traced.trued_up, true);
      assert.deepEqual(traced.reply, { input: PLAIN_TOKENS + 5000, read: 5000, written: 0 });
      const row = await durableRow<Row>(gw, devKey, requestId);
      assert.deepEqual(traced, ledgerIn(row));
      assertRowCarries(row, traced);
    });
  }
});
