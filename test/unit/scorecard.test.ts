import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { ScorecardRow } from '../../src/lifecycle/rows.js';
import { feedbackKey, SkillSamples } from '../../src/lifecycle/samples.js';
import { computeScorecard, type ScorecardInput, type TaskOutcome } from '../../src/lifecycle/scorecard.js';
import { ProcessRowWindow } from '../../src/lifecycle/sources.js';
import { addValue, mergeSketch, sketchOf, spreadOf, type Sketch } from '../../src/lifecycle/sketch.js';
import { splitCheck, wilson } from '../../src/lifecycle/stats.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
let seq = 0;

interface RowSpec {
  arm: 'treatment' | 'control' | 'shadow';
  outcome?: string;
  session?: string | null;
  status?: number;
  retry?: boolean;
  fidelity?: boolean | null;
  detail?: Record<string, unknown>;
  latency?: number;
}

function row(skill: string, s: RowSpec): ScorecardRow {
  const n = seq++;
  return {
    request_id: `r${n}`,
    ts: new Date(T0 + n * 1000).toISOString(),
    tenant_id: 'acme',
    key_id: 'key_a',
    session_id: s.session ?? null,
    task_id: null,
    status: s.status ?? 200,
    latency_ms: s.latency ?? 100,
    overhead_ms: 1,
    cost_usd: 0.001,
    tokens_in: 10,
    tokens_out: 5,
    tokens_saved: 0,
    retry: s.retry ?? false,
    relay_reason: null,
    error_detail: null,
    tool_fidelity: s.fidelity ?? null,
    skills: { [skill]: { arm: s.arm, outcome: s.outcome ?? (s.arm === 'control' ? 'skipped' : 'applied'), ...(s.detail && { detail: s.detail }) } },
  };
}

const many = (n: number, skill: string, s: RowSpec | ((i: number) => RowSpec)): ScorecardRow[] => Array.from({ length: n }, (_, i) => row(skill, typeof s === 'function' ? s(i) : s));

/** `tasks` sessions of `turns` requests each in one arm; outcomes filed per session */
function sessions(skill: string, arm: 'treatment' | 'control', tasks: number, turns: number, prefix: string, outcome: (i: number) => TaskOutcome | undefined, feedback: Map<string, TaskOutcome>): ScorecardRow[] {
  const out: ScorecardRow[] = [];
  for (let i = 0; i < tasks; i++) {
    const said = outcome(i);
    if (said) feedback.set(feedbackKey('session', `${prefix}${i}`), said);
    for (let j = 0; j < turns; j++) out.push(row(skill, { arm, session: `${prefix}${i}` }));
  }
  return out;
}

/** the rows' samples of one skill, as a store adds them up */
function samplesOf(rows: readonly ScorecardRow[], skill: string): SkillSamples {
  const samples = new SkillSamples();
  for (const r of rows) samples.addRow(r, skill);
  return samples;
}

const SKILL = 'prompt_compaction';
const card = (rows: ScorecardRow[], over: Partial<Omit<ScorecardInput, 'samples'>> = {}) =>
  computeScorecard({ skill: SKILL, feedback: new Map(), armed: false, history: [], canaryPercent: null, source: { store: 'process' }, ...over, samples: samplesOf(rows, over.skill ?? SKILL) });

describe('scorecard status', () => {
  it('NO_DATA under 20 samples, even with nothing wrong', () => {
    const c = card(many(19, SKILL, { arm: 'treatment' }));
    assert.equal(c.status, 'NO_DATA');
    assert.deepEqual(c.sample_size, { total: 19, treatment: 19, control: 0 });
  });

  it('NO_DATA with 20 in all but under 20 on one arm of a canary: the arms cannot be compared', () => {
    const c = card([...many(5, SKILL, { arm: 'treatment' }), ...many(30, SKILL, { arm: 'control' })]);
    assert.equal(c.sample_size.total, 35);
    assert.equal(c.status, 'NO_DATA');
  });

  it('rows of other skills, and off or rolled_back requests (no arm), are not samples', () => {
    const c = card([...many(30, 'semantic_cache', { arm: 'treatment' }), ...many(10, SKILL, { arm: 'treatment' })]);
    assert.equal(c.sample_size.total, 10);
  });

  it('HEALTHY canary with 20+ per arm and nothing crossed', () => {
    const c = card([...many(25, SKILL, { arm: 'treatment' }), ...many(25, SKILL, { arm: 'control' })]);
    assert.equal(c.status, 'HEALTHY');
    assert.deepEqual(c.breakers, []);
    assert.equal(c.breaker_action, 'advisory');
  });

  it('REGRESSION_WARNING when treatment upstream errors exceed control by more than 5 points', () => {
    const c = card([...many(40, SKILL, (i) => ({ arm: 'treatment', status: i < 4 ? 502 : 200 })), ...many(40, SKILL, { arm: 'control' })]);
    assert.equal(c.status, 'REGRESSION_WARNING');
    assert.match(c.warnings.join(), /upstream_error_rate 10\.0% vs control 0\.0%/);
    assert.deepEqual(c.breakers, []);
  });

  it('REGRESSION_WARNING when treatment retries are more than 2x control', () => {
    const c = card([...many(40, SKILL, (i) => ({ arm: 'treatment', retry: i < 7 })), ...many(40, SKILL, (i) => ({ arm: 'control', retry: i < 3 }))]);
    assert.equal(c.status, 'REGRESSION_WARNING');
    assert.match(c.warnings.join(), /client_retry_rate 17\.5% > 2x control 7\.5%/);
  });

  it('REGRESSION_WARNING when turns per task are up 15 to 25 percent', () => {
    const fb = new Map<string, TaskOutcome>();
    const c = card([...sessions(SKILL, 'treatment', 5, 6, 't', () => undefined, fb), ...sessions(SKILL, 'control', 6, 5, 'c', () => undefined, fb)]);
    assert.deepEqual(c.downstream_ai_metrics.turns_per_task, { treatment: 6, control: 5 });
    assert.equal(c.status, 'REGRESSION_WARNING');
    assert.match(c.warnings.join(), /turns_per_task \+20\.0%/);
  });

  it('tripwire fail_open_rate above 1%: advisory when not armed, triggered when armed', () => {
    const rows = many(30, SKILL, (i) => ({ arm: 'treatment', outcome: i === 0 ? 'ceiling_exceeded' : 'applied' }));
    const advisory = card(rows);
    assert.equal(advisory.status, 'BREAKER_ADVISORY');
    assert.equal(advisory.breaker_action, 'advisory');
    assert.deepEqual(advisory.breakers, ['fail_open_rate']);
    assert.deepEqual(advisory.anomalies, ['fail_open_rate 3.3% > 1.0%']);
    const armed = card(rows, { armed: true });
    assert.equal(armed.status, 'CIRCUIT_BREAKER_TRIGGERED');
    assert.equal(armed.breaker_action, 'auto_rollback');
  });

  it('a direct_passthrough relay counts as failed open too', () => {
    const rows = many(20, SKILL, { arm: 'treatment' });
    const c = card(rows.map((r, i) => (i < 20 ? { ...r, relay_reason: 'fail_open' } : r)));
    assert.deepEqual(c.anomalies, ['fail_open_rate 100.0% > 1.0%']);
  });

  it('tripwire tool_call_fidelity below 97% in treatment (replies without declared tools are not counted)', () => {
    const c = card(many(40, SKILL, (i) => ({ arm: 'treatment', fidelity: i < 20 ? null : i > 21 })));
    assert.equal(c.downstream_ai_metrics.tool_call_fidelity.treatment, 0.9);
    assert.deepEqual(c.breakers, ['tool_call_fidelity']);
    assert.match(c.anomalies[0] ?? '', /^tool_call_fidelity 90\.0% < 97\.0%/);
  });

  it('tripwire turns_per_task up more than 25%', () => {
    const fb = new Map<string, TaskOutcome>();
    const c = card([...sessions(SKILL, 'treatment', 4, 8, 't', () => undefined, fb), ...sessions(SKILL, 'control', 5, 5, 'c', () => undefined, fb)]);
    assert.deepEqual(c.breakers, ['turns_per_task']);
    assert.match(c.anomalies[0] ?? '', /^turns_per_task \+60\.0% > \+25\.0%/);
  });

  it('tripwires task_success and goodput more than 5 points below control, from feedback', () => {
    const fb = new Map<string, TaskOutcome>();
    const rows = [
      ...sessions(SKILL, 'treatment', 10, 3, 't', (i) => (i < 6 ? 'success' : 'failure'), fb),
      ...sessions(SKILL, 'control', 10, 3, 'c', (i) => (i < 9 ? 'success' : 'failure'), fb),
    ];
    const c = card(rows, { feedback: fb });
    assert.deepEqual(c.downstream_ai_metrics.task_success_rate, { treatment: 0.6, control: 0.9 });
    assert.deepEqual(c.downstream_ai_metrics.goodput, { treatment: 0.6, control: 0.9 });
    assert.deepEqual(c.breakers, ['task_success', 'goodput']);
  });

  it('tripwire fold_ledger: negative net dollars over 5 or more folds', () => {
    const FOLD = 'agent_trajectory_compaction';
    const rows = many(25, FOLD, (i) => ({ arm: 'treatment', ...(i < 5 && { detail: { ledger_usd: i === 0 ? 0.01 : -0.004, ledger_trued_up: i < 2 } }) }));
    const c = card(rows, { skill: FOLD, armed: true });
    assert.equal(c.status, 'CIRCUIT_BREAKER_TRIGGERED');
    assert.deepEqual(c.breakers, ['fold_ledger']);
    assert.deepEqual(c.skill_specific_metrics.fold_ledger, { folds: 5, trued_up: 2, net_usd: -0.006 });
    const four = card(rows.filter((_, i) => i !== 0 && i !== 1), { skill: FOLD, armed: true });
    assert.equal(four.skill_specific_metrics.fold_ledger?.folds, 3);
    assert.equal(four.status, 'HEALTHY', 'fewer than 5 folds never trip, negative or not');
  });

  it('confounded: session coverage apart by more than 20 points keeps task-level numbers and stops tripwires 3-5, not the others', () => {
    const fb = new Map<string, TaskOutcome>();
    const rows = [
      // treatment: every request in a session, many turns, failing tasks
      ...sessions(SKILL, 'treatment', 4, 8, 't', () => 'failure', fb),
      // control: a quarter of requests in sessions
      ...sessions(SKILL, 'control', 2, 5, 'c', () => 'success', fb),
      ...many(30, SKILL, { arm: 'control' }),
    ];
    const c = card(rows, { feedback: fb });
    assert.equal(c.confounded, true);
    assert.equal(c.confounded_reason, 'session_share_treatment=1 control=0.25');
    assert.deepEqual(c.downstream_ai_metrics.turns_per_task, { treatment: 8, control: 5 });
    assert.deepEqual(c.breakers, []);
    assert.equal(c.status, 'HEALTHY');
    const withFailOpen = card(rows.map((r, i) => (i === 0 ? { ...r, skills: { [SKILL]: { arm: 'treatment', outcome: 'error' } } } : r)), { feedback: fb });
    assert.deepEqual(withFailOpen.breakers, ['fail_open_rate'], 'a single-arm tripwire still fires when confounded');
  });

  it('an arm with no sessions reads null for task-level fields; calls without sessions are single-call metrics', () => {
    const fb = new Map<string, TaskOutcome>();
    const c = card([...sessions(SKILL, 'treatment', 5, 5, 't', () => 'success', fb), ...many(25, SKILL, { arm: 'control' })], { feedback: fb });
    const d = c.downstream_ai_metrics;
    assert.deepEqual([d.turns_per_task.control, d.task_success_rate.control, d.goodput.control, d.cost_per_task_usd.control, d.end_to_end_duration_ms.control], [null, null, null, null, null]);
    assert.equal(d.turns_per_task.treatment, 5);
    assert.deepEqual(d.single_call_metrics.requests, { treatment: 0, control: 25 });
    assert.deepEqual(d.task_sample_size, { treatment: 5, control: 0 });
  });

  it('the split check and the confidence intervals are reported and never change the status', () => {
    // canary:10 configured, yet half the sessions landed in treatment
    const rows = [...many(100, SKILL, (i) => ({ arm: 'treatment', session: `t${i}` })), ...many(100, SKILL, (i) => ({ arm: 'control', session: `c${i}` }))];
    const c = card(rows, { canaryPercent: 10 });
    assert.equal(c.status, 'HEALTHY');
    assert.equal(c.sample_ratio?.mismatch, true);
    assert.equal(c.sample_ratio?.observed_treatment_share, 0.5);
    assert.ok((c.sample_ratio?.p_value ?? 1) < 0.001);
    const fair = card(rows, { canaryPercent: 50 });
    assert.equal(fair.sample_ratio?.mismatch, false);
    const ci = c.confidence_intervals.upstream_error_rate.treatment;
    assert.ok(ci !== null && ci[0] === 0 && ci[1] > 0.03 && ci[1] < 0.04, `Wilson upper bound of 0/100 is ~0.037 (got ${String(ci)})`);
  });

  it('shadow samples count toward the total and show as a third arm', () => {
    const c = card(many(20, SKILL, { arm: 'shadow', outcome: 'shadow' }));
    assert.deepEqual(c.sample_size, { total: 20, treatment: 0, control: 0, shadow: 20 });
    assert.equal(c.status, 'HEALTHY');
    assert.ok('shadow' in c.generic_metrics.fail_open_rate);
  });

  it('skill-specific metrics come from the skills\' reported detail', () => {
    const pii = computeScorecard({
      skill: 'pii_redaction',
      samples: samplesOf(many(3, 'pii_redaction', { arm: 'treatment', detail: { kinds: { email: 2, iban: 1 } } }), 'pii_redaction'),
      feedback: new Map(),
      armed: false,
      history: [],
      canaryPercent: null,
      source: { store: 'durable' },
    });
    assert.deepEqual(pii.skill_specific_metrics.redactions_by_kind, { email: 6, iban: 3 });
    const cache = computeScorecard({
      skill: 'semantic_cache',
      samples: samplesOf(
        [
          ...many(3, 'semantic_cache', { arm: 'treatment', outcome: 'hit', detail: { tokens_saved: 100, usd_saved: 0.002 } }),
          ...many(1, 'semantic_cache', { arm: 'treatment', outcome: 'miss' }),
          ...many(4, 'semantic_cache', (i) => ({ arm: 'shadow', outcome: 'shadow', detail: { decision: 'hit', false_hit: i === 0 } })),
        ],
        'semantic_cache',
      ),
      feedback: new Map(),
      armed: false,
      history: [],
      canaryPercent: null,
      source: { store: 'durable' },
    });
    const m = cache.skill_specific_metrics;
    assert.deepEqual([m.cache_hit_rate, m.tokens_saved, m.usd_saved, m.false_hit_rate], [0.75, 300, 0.006, 0.25]);
  });
});

describe('scorecard statistics', () => {
  it('Wilson interval of 50/100 is about 0.40 to 0.60', () => {
    assert.deepEqual(wilson(50, 100), [0.4038, 0.5962]);
    assert.equal(wilson(0, 0), null);
  });

  it('a value added in place makes the sketch its definition gives, widening either way, and the same as merging its own sketch', () => {
    // the definition: [values at or below zero, the first bucket, counts from it on], bucket i holding (1.02^(i-1), 1.02^i]
    const defined = (values: number[]): Sketch | undefined => {
      if (values.length === 0) return undefined;
      const buckets = values.filter((v) => v > 0).map((v) => Math.ceil(Math.log(v) / Math.log(1.02)));
      const zeros = values.length - buckets.length;
      if (buckets.length === 0) return [zeros, 0];
      const first = Math.min(...buckets);
      const counts = new Array<number>(Math.max(...buckets) - first + 1).fill(0);
      for (const b of buckets) counts[b - first]! += 1;
      return [zeros, first, ...counts];
    };
    const orders = {
      ascending: [0.5, 1, 3, 40, 7000],
      descending: [7000, 40, 3, 1, 0.5],
      'zeros first': [0, 0, 12, 0, 0.01, 9000],
      'far apart, repeated': [250, 0.002, 250, 1e6, 0, 0.002, 17.5, 1e6],
    };
    for (const [name, values] of Object.entries(orders)) {
      const added = values.reduce<Sketch | undefined>((s, v) => addValue(s, v), undefined);
      assert.deepEqual(added, defined(values), name);
      assert.deepEqual(
        values.reduce<Sketch | undefined>((s, v) => mergeSketch(s, sketchOf(v)), undefined),
        added,
        `${name}: merged one by one`,
      );
    }
  });

  it('sketches merge in any order to the same counts, and read back percentiles within 1%', () => {
    const values = Array.from({ length: 1000 }, (_, i) => (i % 10 === 0 ? 0 : 0.05 * 1.013 ** i));
    const one = values.reduce<Sketch | undefined>((s, v) => mergeSketch(s, sketchOf(v)), undefined);
    // the same values in halves, each half sketched apart and then merged, the later half first
    const half = (part: number[]) => part.reduce<Sketch | undefined>((s, v) => mergeSketch(s, sketchOf(v)), undefined)!;
    assert.deepEqual(mergeSketch(half(values.slice(500)), half(values.slice(0, 500))), one);
    const sorted = [...values].sort((a, b) => a - b);
    const exact = (p: number) => sorted[Math.ceil((p / 100) * sorted.length) - 1]!;
    const spread = spreadOf(one);
    for (const p of [50, 95, 99] as const) {
      const got = spread[`p${p}`]!;
      assert.ok(Math.abs(got - exact(p)) <= 0.01 * exact(p) + 0.005, `p${p}: ${got} against ${exact(p)}`);
    }
    assert.deepEqual(spreadOf(mergeSketch(sketchOf(0), sketchOf(0))), { p50: 0, p95: 0, p99: 0 });
    assert.deepEqual(spreadOf(undefined), { p50: null, p95: null, p99: null });
  });

  it('split check: 500/1000 against 50% is no mismatch; 600/1000 is', () => {
    assert.equal(splitCheck(500, 1000, 0.5)?.mismatch, false);
    const off = splitCheck(600, 1000, 0.5);
    assert.equal(off?.chi_squared, 40);
    assert.equal(off?.mismatch, true);
  });
});

describe('process row window', () => {
  const SCORED = new Set([SKILL]);

  it('a row without a skill is not kept but takes its slot: the window forgets the older rows as before', async () => {
    const q = { skill: SKILL, sinceMs: 0, nowMs: T0 + 1e9, group: () => 'all' };
    const skillLess = () => ({ ...row(SKILL, { arm: 'treatment' }), skills: {} });
    const window = new ProcessRowWindow(2, SCORED);
    window.record(row(SKILL, { arm: 'treatment' }));
    window.record(skillLess());
    assert.equal((await window.samples('acme', q)).size, 1);
    window.record(skillLess());
    assert.equal((await window.samples('acme', q)).size, 0);
  });

  it('holds no row object: a sample row is kept as its columns, one with only the guardrails\' entry (every request has it) as nothing', async () => {
    const gc = gcFunction();
    const window = new ProcessRowWindow(10, SCORED);
    const refs: Array<WeakRef<ScorecardRow>> = [];
    const q = { skill: SKILL, sinceMs: 0, nowMs: T0 + 1e9, group: () => 'all' };
    // recorded from a function, so no reference to the rows stays on this frame
    const recordAll = () => {
      for (const r of [{ ...row('guardrails', { arm: 'treatment' }), skills: { guardrails: { arm: 'prod', outcome: 'miss' } } }, row(SKILL, { arm: 'shadow' })]) {
        refs.push(new WeakRef(r));
        window.record(r);
      }
    };
    recordAll();
    await new Promise((r) => setImmediate(r));
    gc();
    assert.equal(refs[0]!.deref(), undefined, 'the guardrails-only row is not held');
    assert.equal(refs[1]!.deref(), undefined, 'the sample row is not held');
    assert.equal((await window.samples('acme', q)).get('all')?.arms.shadow.totals.n, 1);
  });

  it('a read of a large window gives the event loop back between slices of rows, and still counts them all', async () => {
    const window = new ProcessRowWindow(20_000, SCORED);
    for (let i = 0; i < 20_000; i++) window.record(row(SKILL, { arm: 'treatment' }));
    let ranDuringRead = false;
    const read = window.samples('acme', { skill: SKILL, sinceMs: 0, nowMs: T0 + 1e9, group: () => 'all' });
    setImmediate(() => (ranDuringRead = true));
    const samples = await read;
    assert.equal(ranDuringRead, true, 'a callback queued after the read began ran before it ended');
    assert.equal(samples.get('all')?.arms.treatment.totals.n, 20_000);
  });

  it('reads the same samples as the rows themselves give, every column of theirs that samples use', async () => {
    const other = 'semantic_cache';
    const window = new ProcessRowWindow(100, new Set([SKILL, other]));
    const rows = Array.from({ length: 48 }, (_, i) => {
      const r = row(i % 6 === 5 ? other : SKILL, {
        arm: (['treatment', 'control', 'shadow'] as const)[i % 3]!,
        outcome: ['applied', 'hit', 'error', 'skipped'][i % 4],
        session: i % 5 === 0 ? null : `s${i % 4}`,
        status: [200, 429, 502][i % 3],
        retry: i % 7 === 0,
        fidelity: [null, true, false][i % 3],
        detail: i % 2 === 0 ? { tokens_saved: i, usd_saved: 0.5, kinds: { email: 1 }, ledger_usd: -0.25, ledger_trued_up: true, decision: 'hit', false_hit: i % 4 === 0 } : undefined,
        latency: 3 + i * 17.25,
      });
      return { ...r, task_id: i % 9 === 0 ? `t${i % 2}` : null, overhead_ms: i % 4 === 0 ? null : i / 8, tokens_saved: i % 3 === 0 ? 12 : 0, relay_reason: i % 8 === 0 ? 'fail_open' : null, cost_usd: i / 64 };
    });
    for (const r of rows) window.record(r);
    const read = async (skill: string) => (await window.samples('acme', { skill, sinceMs: 0, nowMs: T0 + 1e9, group: () => 'all' })).get('all');
    assert.deepEqual(await read(SKILL), samplesOf(rows, SKILL));
    assert.deepEqual(await read(other), samplesOf(rows, other));
  });
});

/** V8's collector, callable: turned on for this process as it runs (the test command passes no flag). */
function gcFunction(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}
