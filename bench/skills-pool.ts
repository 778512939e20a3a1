/**
 * The skill pool's round trip for one stage on a 2 KB chat body, as the
 * engine sends it (body in shared memory): latency p50/p99, and CPU per stage
 * of the main thread and of every other thread (pool threads, plus V8's and
 * libuv's helpers), read per thread from /proc (Linux only).
 *
 *   node --import tsx bench/skills-pool.ts [--threads 2] [--tasks-per-thread 4] [--concurrency 1] [--stages 5000]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { SkillPool } from '../src/skills/pool.js';
import { STARTED_SLOT_INTS, type StageTask } from '../src/skills/stage.js';

const { values } = parseArgs({ options: { threads: { type: 'string', default: '2' }, 'tasks-per-thread': { type: 'string', default: '4' }, concurrency: { type: 'string', default: '1' }, stages: { type: 'string', default: '5000' } } });
const threads = Number(values.threads);
const tasksPerThread = Number(values['tasks-per-thread']);
const concurrency = Number(values.concurrency);
const stages = Number(values.stages);

const pool = new SkillPool(
  { threads, minThreads: threads, shadowThreads: 1, tasksPerThread, maxQueue: 1024, idleTimeoutMs: 60_000, abortGraceMs: 100 },
  [{ id: 'bench', kind: 'guardrail', evaluator: { module: new URL('./skills-evaluator.ts', import.meta.url).href, export: 'parseAndCount' }, shadowBesideDispatch: true, order: 1 }],
);

const body = Buffer.from(JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'word '.repeat(390) }] }));

function task(): Omit<StageTask, 'deadlineAt'> {
  const flagBytes = STARTED_SLOT_INTS * 4;
  const sab = new SharedArrayBuffer(flagBytes + body.length);
  const shared = new Uint8Array(sab, flagBytes);
  shared.set(body);
  return { stage: 'bench', surface: 'chat_completions', acting: false, body: shared, started: new Int32Array(sab, 0, STARTED_SLOT_INTS) };
}

/** CPU ticks (user + system) per thread id of this process. */
function threadTicks(): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(tid, Number(fields[11]) + Number(fields[12]));
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out;
}

async function round(n: number): Promise<{ ms: number[]; waits: number[]; failures: number }> {
  const ms: number[] = [];
  const waits: number[] = [];
  let failures = 0;
  let next = 0;
  async function lane() {
    while (next < n) {
      next++;
      const run = await pool.run(task(), 250);
      if (run.outcome !== 'done') failures++;
      else {
        ms.push(run.ms);
        waits.push(run.ms - run.reply.runMs);
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, lane));
  return { ms, waits, failures };
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

await round(Math.min(1000, stages)); // warm: threads started, code optimised
const ticksPerSecond = 100; // USER_HZ on Linux
const before = threadTicks();
const t0 = performance.now();
const { ms, waits, failures } = await round(stages);
const wallS = (performance.now() - t0) / 1000;
const after = threadTicks();
const main = String(process.pid);
let mainTicks = 0;
let otherTicks = 0;
for (const [tid, t] of after) {
  const d = t - (before.get(tid) ?? 0);
  if (tid === main) mainTicks += d;
  else otherTicks += d;
}
const perStageUs = (ticks: number) => ((ticks / ticksPerSecond) * 1e6) / stages;
console.log(
  JSON.stringify({
    threads,
    concurrency,
    stages,
    body_bytes: body.length,
    p50_ms: +pct(ms, 50).toFixed(3),
    p99_ms: +pct(ms, 99).toFixed(3),
    queue_wait_p99_ms: +pct(waits, 99).toFixed(3),
    failed_open: failures,
    stages_per_s: Math.round(stages / wallS),
    cpu_us_per_stage: { main_thread: Math.round(perStageUs(mainTicks)), other_threads: Math.round(perStageUs(otherTicks)) },
  }),
);
await pool.close();
