import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { before, test } from 'node:test';
import { SkillPool, type PoolSettings } from '../../src/skills/pool.js';
import { STAGE_FINISHED, STAGE_RUNNING } from '../../src/skills/stage.js';
import { createMetrics } from '../../src/telemetry/metrics.js';
import { guardrailRow } from '../fixtures/skills/rows.js';
import { sharedTask } from '../helpers/stage-input.js';
import { eventually } from '../helpers/wait.js';

/**
 * The backstop against a thread that gets no CPU. This file's process runs on
 * one core (its own process, so the other pool tests keep both), where a busy
 * stage at normal priority leaves a shadow thread at the lowest priority
 * almost nothing: such a stage is late, not stuck, and its thread must not
 * be killed for it; a stage stuck in a loop beside the same busy stage still is.
 */

const ROWS = [guardrailRow('describe', 'describeBody', 1), guardrailRow('spin', 'spinUntilDeadline', 2), guardrailRow('loop', 'loopForever', 3)];
const SETTINGS: PoolSettings = { threads: 2, minThreads: 2, shadowThreads: 1, tasksPerThread: 1, maxQueue: 4, idleTimeoutMs: 60_000, abortGraceMs: 20 };
const LONG_MS = 60_000;

let pinned = true;
before(() => {
  try {
    execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
  } catch {
    pinned = false;
  }
});

function pool(t: { after(fn: () => Promise<void>): void }) {
  const metrics = createMetrics();
  const p = new SkillPool(SETTINGS, ROWS, metrics.skillPool);
  t.after(() => p.close());
  const respawns = async () => (await metrics.skillRespawns.get()).values.find((v) => v.labels['cause'] === 'backstop')?.value ?? 0;
  return { pool: p, respawns };
}

const task = (stage: string) => sharedTask(stage, 'chat_completions', '{"messages":[]}');

async function warm(p: SkillPool) {
  for (const beside of [false, true]) assert.equal((await p.runWithFollowers(task('describe'), LONG_MS, [], beside))[0]!.outcome, 'done');
}

test('a shadow stage starved of CPU past its ceiling is reported late, and its thread is not killed for it', async (t) => {
  if (!pinned) return t.skip('taskset is not available to put the process on one core');
  const { pool: p, respawns } = pool(t);
  await warm(p);
  const shadow = task('spin');
  const late = p.runWithFollowers(shadow, 100, [], true);
  await eventually(() => Atomics.load(shadow.started, 0) === STAGE_RUNNING, 'the shadow stage to start');
  // a request's stage keeps the one core busy at normal priority for a second
  const busy = p.run(task('spin'), 1000);
  assert.equal((await late)[0]!.outcome, 'ceiling_exceeded');
  assert.equal((await busy).outcome, 'ceiling_exceeded');
  assert.equal(await respawns(), 0, 'no thread killed while the stage waited for the core');
  // once the core is free, the starved stage sees its deadline and ends on its thread
  await eventually(() => Atomics.load(shadow.started, 0) === STAGE_FINISHED, 'the starved stage to finish on its own');
  assert.equal(await respawns(), 0);
  assert.equal((await p.runWithFollowers(task('describe'), LONG_MS, [], true))[0]!.outcome, 'done', 'the shadow thread serves on');
});

test('a stage stuck in a loop beside a busy one on the same core is still killed by the backstop', async (t) => {
  if (!pinned) return t.skip('taskset is not available to put the process on one core');
  const { pool: p, respawns } = pool(t);
  await warm(p);
  const spinning = task('spin');
  const busy = p.run(spinning, 5000);
  await eventually(() => Atomics.load(spinning.started, 0) === STAGE_RUNNING, 'the busy stage to start');
  assert.equal((await p.run(task('loop'), 100)).outcome, 'ceiling_exceeded');
  await eventually(async () => (await respawns()) === 1, 'the backstop respawn');
  // it gets its share of the core: it ran, so it was stuck, not starved, and was killed while the other stage still ran
  assert.equal(Atomics.load(spinning.started, 0), STAGE_RUNNING);
  await busy;
});
