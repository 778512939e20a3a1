/**
 * The scorecard's own work, without the network: one read over 100,000 rows of
 * a canary in the window, and one breaker sweep over 1,000 keys (20 rows each).
 * Run: node --import tsx bench/scorecard.ts
 */
import { performance } from 'node:perf_hooks';
import { ProcessRowWindow, type ScorecardRow } from '../src/lifecycle/rows.js';
import { computeScorecard } from '../src/lifecycle/scorecard.js';

const SKILL = 'agent_trajectory_compaction';
const now = Date.now();

function rows(n: number, keys: number): ScorecardRow[] {
  return Array.from({ length: n }, (_, i) => ({
    request_id: `r${i}`,
    ts: new Date(now - (i % 3_600_000)).toISOString(),
    tenant_id: 'acme',
    key_id: `key_${i % keys}`,
    session_id: i % 3 === 0 ? null : `s${i % 5000}`,
    task_id: null,
    status: i % 97 === 0 ? 502 : 200,
    latency_ms: 100 + (i % 400),
    overhead_ms: 0.2 + (i % 10) / 10,
    cost_usd: 0.0002,
    tokens_in: 500,
    tokens_out: 100,
    tokens_saved: 0,
    retry: i % 50 === 0,
    relay_reason: null,
    error_detail: null,
    tool_fidelity: i % 4 === 0 ? i % 200 !== 0 : null,
    skills: { [SKILL]: { arm: i % 2 === 0 ? 'treatment' : 'control', outcome: 'applied', ...(i % 10 === 0 && { detail: { ledger_usd: 0.001 } }) } },
  }));
}

const time = (what: string, runs: number, f: () => void) => {
  f();
  const t0 = performance.now();
  for (let i = 0; i < runs; i++) f();
  const ms = (performance.now() - t0) / runs;
  process.stdout.write(`${what}: ${ms.toFixed(1)} ms\n`);
};

const big = rows(100_000, 50);
const feedback = new Map();
time('scorecard over 100,000 rows (compute only)', 5, () => {
  computeScorecard({ skill: SKILL, rows: big, feedback, armed: true, history: [], canaryPercent: 50, source: { store: 'durable' } });
});

const window = new ProcessRowWindow(100_000);
for (const r of big) window.record(r);
const inWindow = await window.rows('acme', { sinceMs: now - 3_600_000, skill: SKILL });
time('process window: the 100,000 rows of a tenant, key and skill in the last hour', 5, () => {
  void window.rows('acme', { sinceMs: now - 3_600_000, skill: SKILL });
});
process.stdout.write(`(${inWindow.length} rows in the window)\n`);

// the sweep reads a tenant's rows once and judges each key on its own slice
const sweepRows = rows(20_000, 1000);
time('sweep work for 1,000 keys (20 rows each)', 3, () => {
  const byKey = new Map<string, ScorecardRow[]>();
  for (const r of sweepRows) (byKey.get(r.key_id) ?? byKey.set(r.key_id, []).get(r.key_id))?.push(r);
  for (const keyRows of byKey.values()) computeScorecard({ skill: SKILL, rows: keyRows, feedback, armed: true, history: [], canaryPercent: 50, source: { store: 'durable' } });
});
