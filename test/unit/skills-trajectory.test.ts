import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { joinCatalog, lookupModel } from '../../src/providers/catalog.js';
import { SkillPool } from '../../src/skills/pool.js';
import type { StageContext } from '../../src/skills/stage.js';
import { SKILLS } from '../../src/skills/table.js';
import { textTokens } from '../../src/skills/tokens.js';
import { evaluateTrajectoryCompaction } from '../../src/skills/trajectory/index.js';
import { viewOf } from '../../src/skills/views/index.js';
import { AGENT_SURFACES, agentBody, type AgentOptions, type AgentSurface } from '../helpers/agent-conversation.js';
import { NO_DEADLINE, PASSED, sharedTask, stageInput } from '../helpers/stage-input.js';
import { toolRuleErrors } from '../helpers/vendor-rules.js';

type J = Record<string, unknown>;
const parse = (b: Uint8Array) => JSON.parse(Buffer.from(b).toString('utf8')) as J;
/** generate-content and converse name the model in the URL: the pipeline passes it in the context */
const URL_MODEL: Partial<Record<AgentSurface, string>> = { generate_content: 'gemini-2.5-pro', converse: 'anthropic.claude-sonnet-4-5-20250929-v1:0' };
const run = (surface: AgentSurface, o: AgentOptions = {}, context: StageContext = {}, acting = true) =>
  evaluateTrajectoryCompaction(stageInput('agent_trajectory_compaction', surface, agentBody(surface, o), acting, { model: URL_MODEL[surface], ...context }), NO_DEADLINE);
/** generous ratio so the whole older span folds */
const WIDE = { foldParams: { max_fold_ratio: 0.95 } };
const promptTokens = (surface: string, body: J) => viewOf(surface, body)!.parts().reduce((n, p) => n + textTokens(p.text), 0);

for (const surface of AGENT_SURFACES) {
  describe(`agent_trajectory_compaction on ${surface}`, () => {
    test('older tool turns fold into one summary turn; every call keeps its result; the vendor rules hold', () => {
      const before = agentBody(surface);
      assert.deepEqual(toolRuleErrors(surface, before), [], 'the example is valid to begin with');
      const r = run(surface, {}, WIDE);
      assert.equal(r.outcome, 'applied', JSON.stringify(r.detail));
      const out = parse(r.change!.body!);
      assert.deepEqual(toolRuleErrors(surface, out), []);
      const parts = viewOf(surface, out)!.parts();
      const summary = parts.find((p) => p.text.startsWith('[Earlier work folded by the gateway'));
      assert.ok(summary, 'one summary turn');
      assert.match(summary.text, /called read_file\(\{"path":"src\/module0\.ts"/);
      assert.match(summary.text, /result \(\d+ chars, 60 lines\)/);
      // the task, the system prompt and the last turns are kept as sent
      assert.ok(parts.some((p) => p.text === 'Find where the retry budget is computed and explain it.' || p.text.includes('Find where the retry budget')));
      assert.ok(parts.some((p) => p.kind === 'system'));
      assert.equal(parts.at(-1)!.text, 'Go on and propose the patch.');
      const d = r.detail!;
      assert.equal(d['tokens_saved'], promptTokens(surface, before) - promptTokens(surface, out));
      assert.ok((d['tokens_saved'] as number) >= 2000);
      assert.equal(typeof d['ledger_usd'], 'number');
    });

    test('the last keep_recent_turns turns are never folded', () => {
      const keep = 6;
      const before = agentBody(surface);
      const r = run(surface, {}, { foldParams: { keep_recent_turns: keep, max_fold_ratio: 0.95 } });
      assert.equal(r.outcome, 'applied');
      const beforeView = viewOf(surface, before)!;
      const afterView = viewOf(surface, parse(r.change!.body!))!;
      const tail = (v: ReturnType<typeof viewOf>, n: number) => v!.parts().filter((p) => p.turn >= v!.turnCount() - n).map((p) => p.text);
      assert.deepEqual(tail(afterView, keep), tail(beforeView, keep));
    });

    test('thresholds: under min_fold_tokens, or no fold within max_fold_ratio, nothing changes', () => {
      const small = run(surface, { rounds: 8, resultLines: 10 });
      assert.equal(small.outcome, 'skipped');
      assert.equal(small.change, undefined);
      const tight = run(surface, {}, { foldParams: { max_fold_ratio: 0.1 } });
      assert.equal(tight.outcome, 'skipped');
      // the default ratio (0.5) folds a shorter span than a wide one, and stays within half the prompt
      const half = run(surface);
      assert.equal(half.outcome, 'applied');
      const saved = half.detail!['tokens_saved'] as number;
      assert.ok(saved <= 0.5 * (half.detail!['prompt_tokens'] as number));
      assert.ok(saved < (run(surface, {}, WIDE).detail!['tokens_saved'] as number));
    });
  });
}

test('a conversation without tool calls, or with only recent ones, is left alone', () => {
  const plain = { model: 'gpt-4o', messages: [{ role: 'user', content: 'x '.repeat(5000) }] };
  assert.equal(evaluateTrajectoryCompaction(stageInput('t', 'chat_completions', plain), NO_DEADLINE).detail!['reason'], 'no tool calls');
  const r = run('chat_completions', { rounds: 1 });
  assert.equal(r.outcome, 'skipped');
  assert.match(r.detail!['reason'] as string, /no tool turns older than the last 4/);
});

test('a past deadline gives up with ceiling_exceeded', () => {
  const r = evaluateTrajectoryCompaction(stageInput('t', 'chat_completions', agentBody('chat_completions')), PASSED);
  assert.equal(r.outcome, 'ceiling_exceeded');
});

describe('the fold ledger', () => {
  const price = (m: string) => lookupModel(m)!.price;

  test('no cache marker before the fold on messages: nothing lost, net = tokens saved × input price', () => {
    const r = run('messages', { marker: 'system' }, WIDE);
    const l = r.detail!['ledger'] as J;
    const saved = r.detail!['tokens_saved'] as number;
    assert.equal(l['cached_tokens_lost'], 0);
    assert.equal(l['usd_saved'], (saved * price('claude-sonnet-4-5').input) / 1e6);
    assert.equal(r.detail!['ledger_usd'], l['usd_saved']);
    assert.equal(r.detail!['usd_saved'], l['usd_saved']);
  });

  test('a cache marker past the fold point: the cached tokens after it are lost at (input − cached input)', () => {
    const body = agentBody('messages', { marker: 'late' });
    const view = viewOf('messages', body)!;
    const counts = view.parts().map((p) => ({ p, n: textTokens(p.text) }));
    const marked = counts.filter((c) => c.p.cacheMarked).reduce((a, c) => a + c.n, 0);
    const firstCall = view.parts().find((p) => p.kind === 'tool_call')!.turn;
    const beforeFold = counts.filter((c) => c.p.turn < firstCall).reduce((a, c) => a + c.n, 0);
    const r = run('messages', { marker: 'late' }, WIDE);
    const l = r.detail!['ledger'] as J;
    const p = price('claude-sonnet-4-5');
    assert.equal(l['cached_tokens_lost'], marked - beforeFold);
    assert.equal(l['cache_loss_usd'], ((marked - beforeFold) * (p.input - p.cached_input)) / 1e6);
    assert.equal(l['net_usd'], (l['usd_saved'] as number) - (l['cache_loss_usd'] as number));
    assert.equal(r.detail!['ledger_usd'], l['net_usd']);
    assert.ok((l['net_usd'] as number) < (l['usd_saved'] as number));
  });

  test('OpenAI caches prefixes of 1,024 tokens by itself: the previous request past the fold point is lost', () => {
    const body = agentBody('chat_completions');
    const view = viewOf('chat_completions', body)!;
    const counts = view.parts().map((p) => ({ p, n: textTokens(p.text) }));
    const last = view.turnCount() - 1;
    const previous = counts.filter((c) => c.p.turn !== last).reduce((a, c) => a + c.n, 0);
    const beforeFold = counts.filter((c) => c.p.turn < 2).reduce((a, c) => a + c.n, 0);
    const r = run('chat_completions', {}, WIDE);
    const l = r.detail!['ledger'] as J;
    const p = price('gpt-4o');
    assert.ok(previous >= 1024);
    assert.equal(l['cached_tokens_lost'], previous - beforeFold);
    assert.equal(l['cache_loss_usd'], ((previous - beforeFold) * (p.input - p.cached_input)) / 1e6);
  });

  test('a model the catalog does not price: tokens saved, no dollars', () => {
    const r = run('chat_completions', { model: 'my-finetune' }, WIDE);
    assert.equal(r.outcome, 'applied');
    assert.equal(r.detail!['ledger_usd'], undefined);
    assert.deepEqual(r.detail!['ledger'], { tokens_saved: r.detail!['tokens_saved'], priced: false });
  });
});

describe('through a real SkillPool with the table rows', () => {
  // a model the main thread's catalog holds beyond the shipped ones (as a self-hosted destination's would be)
  joinCatalog([{ id: 'house-model', provider: 'openai', price: { input: 4, output: 8, cached_input: 1, cache_write: 4 }, context_window: 100_000, max_output_tokens: 4096, capabilities: ['chat', 'tools'] }]);
  const pool = new SkillPool({ threads: 1, minThreads: 1, shadowThreads: 1, tasksPerThread: 1, maxQueue: 4, idleTimeoutMs: 60_000, abortGraceMs: 50 }, SKILLS);
  after(() => pool.close());
  const task = (surface: string, json: unknown, context: StageContext) => sharedTask('agent_trajectory_compaction', surface, json, true, context);

  test('the worker prices by the main thread\'s catalog', async () => {
    const r = await pool.run(task('chat_completions', agentBody('chat_completions', { model: 'house-model' }), WIDE), 60_000);
    const result = r.outcome === 'done' ? r.reply.result : undefined;
    const ledger = result?.detail?.['ledger'] as J;
    assert.equal(ledger['model'], 'house-model');
    assert.equal(ledger['usd_saved'], ((result!.detail!['tokens_saved'] as number) * 4) / 1e6);
  });

  test('the fold params cross to the worker in the task context; the body folds there', async () => {
    const context = { model: 'anthropic.claude-sonnet-4-5-20250929-v1:0', foldParams: { max_fold_ratio: 0.95, keep_recent_turns: 2 } };
    const r = await pool.run(task('converse', agentBody('converse'), context), 60_000);
    assert.equal(r.outcome, 'done');
    const result = r.outcome === 'done' ? r.reply.result : undefined;
    assert.equal(result?.outcome, 'applied', JSON.stringify(r));
    assert.deepEqual((result!.detail!['params'] as J)['keep_recent_turns'], 2);
    assert.equal((result!.detail!['ledger'] as J)['model'], 'anthropic.claude-sonnet-4-5-20250929-v1:0');
    assert.deepEqual(toolRuleErrors('converse', parse(result!.change!.body!)), []);
  });
});

test('in shadow the detail is what the fold would have been', () => {
  const acting = run('responses', {}, WIDE);
  const shadow = run('responses', {}, WIDE, false);
  assert.deepEqual(shadow.detail, acting.detail);
});

test('a system message inside the turns ends the span: it is never folded', () => {
  const body = agentBody('chat_completions');
  const messages = body['messages'] as J[];
  // a developer note after the third round
  messages.splice(8, 0, { role: 'developer', content: 'Keep answers under 100 words.' });
  const r = evaluateTrajectoryCompaction(stageInput('t', 'chat_completions', body, true, WIDE), NO_DEADLINE);
  assert.equal(r.outcome, 'applied');
  const out = parse(r.change!.body!);
  assert.ok((out['messages'] as J[]).some((m) => m['content'] === 'Keep answers under 100 words.'));
  assert.equal(r.detail!['folded_turns'], 6);
  assert.deepEqual(toolRuleErrors('chat_completions', out), []);
});
