import { Piscina } from 'piscina';
import { CATALOG } from '../providers/catalog.js';
import type { SkillRow } from './table.js';
import { STAGE_RUNNING, type StageReply, type StageTask, type WorkerEvaluators } from './stage.js';

/**
 * The skill pool: the only module that knows threads (the only piscina
 * import). It runs one stage per task under that stage's wall-clock ceiling
 * and always settles with an outcome, never a rejection:
 *
 * - at the ceiling the stage is over for the request (`ceiling_exceeded`, or
 *   `loop_stalled` when the ceiling's own timer ran a whole ceiling late: the
 *   main loop, not the stage, was stuck);
 * - a stage still running `abortGraceMs` later ignored its cooperative
 *   deadline: its thread is killed and replaced (a respawn, counted);
 * - a full pool (every thread busy, `maxQueue` waiting) is `overloaded`; a thread that dies mid-stage is `error`
 *   (a respawn, counted).
 */

export interface PoolSettings {
  threads: number;
  minThreads: number;
  maxQueue: number;
  idleTimeoutMs: number;
  abortGraceMs: number;
}

/** Where the pool reports its threads and timings (telemetry/metrics.ts implements it). */
export interface PoolObserver {
  /** a thread ended mid-stage: killed by the backstop, or it exited */
  threadRespawned(cause: 'backstop' | 'exit'): void;
  /** a stage that ran: its wait for a thread (including the message hops) and its run time in the worker */
  stageTimed(stage: string, queueWaitMs: number, runMs: number): void;
}

export type StageRun =
  | { outcome: 'done'; reply: StageReply; ms: number }
  | { outcome: 'ceiling_exceeded' | 'loop_stalled' | 'overloaded' | 'error'; detail: string; ms: number };

/**
 * The worker entry beside this file: compiled JavaScript from dist/; under tsx
 * (tests, development) a shim that loads tsx into the thread first, since a
 * Node 20 worker does not inherit the parent's `--import` hooks.
 */
const workerFile = () => new URL(import.meta.url.endsWith('.ts') ? './worker-tsx.mjs' : './worker.js', import.meta.url);

export class SkillPool {
  private readonly piscina: Piscina<StageTask, StageReply>;
  private closing = false;
  /** stages handed to piscina and not yet settled by it: running, queued, or past their ceiling and not yet stopped */
  private inFlight = 0;

  constructor(
    private readonly settings: PoolSettings,
    rows: readonly SkillRow[],
    private readonly observer?: PoolObserver,
  ) {
    const workerData: WorkerEvaluators = {
      evaluators: rows.map((r) => ({ id: r.id, module: r.evaluator.module, export: r.evaluator.export })),
      catalog: [...CATALOG],
    };
    this.piscina = new Piscina({
      filename: workerFile().href,
      minThreads: settings.minThreads,
      maxThreads: settings.threads,
      // the queue bound is kept here (inFlight): piscina queues a task that carries an abort
      // signal apart from its bounded queue, so its own maxQueue would not hold
      idleTimeout: settings.idleTimeoutMs,
      // one stage per thread: aborting a task kills its thread, and with it any sibling task (piscina #934)
      concurrentTasksPerWorker: 1,
      workerData,
    });
    // a thread that dies between tasks is replaced by piscina; it is not any request's error
    this.piscina.on('error', () => undefined);
  }

  /** Threads alive now, stages waiting for one, and stages handed to the pool and not yet settled (the bound `maxQueue` applies to). */
  get stats(): { threads: number; queued: number; inFlight: number } {
    return { threads: this.piscina.threads.length, queued: this.piscina.queueSize, inFlight: this.inFlight };
  }

  /**
   * Runs one stage; settles within `ceilingMs` (plus timer latency) with its
   * outcome. The task's body and flag should live in shared memory: they then
   * cross to the worker without a copy (a plain buffer would be copied).
   */
  run(task: Omit<StageTask, 'deadlineAt'>, ceilingMs: number): Promise<StageRun> {
    const t0 = performance.now();
    const elapsed = () => performance.now() - t0;
    if (ceilingMs === 0) return Promise.resolve({ outcome: 'ceiling_exceeded', detail: 'ceiling 0 ms', ms: 0 });
    if (this.inFlight >= this.settings.threads + this.settings.maxQueue) {
      return Promise.resolve({ outcome: 'overloaded', detail: `the skill pool is full (${this.settings.threads} threads, ${this.settings.maxQueue} queued)`, ms: 0 });
    }
    return new Promise<StageRun>((resolve) => {
      let settled = false;
      const settle = (run: StageRun) => {
        if (settled) return;
        settled = true;
        clearTimeout(ceiling);
        resolve(run);
      };
      /** a ceiling run out late by a whole ceiling or more means the main loop, not the stage, was stuck */
      const missed = (ms: number): StageRun =>
        ms - ceilingMs >= ceilingMs
          ? { outcome: 'loop_stalled', detail: `the event loop was stalled: ceiling of ${ceilingMs} ms noticed at ${Math.round(ms)} ms`, ms }
          : { outcome: 'ceiling_exceeded', detail: `past the ${ceilingMs} ms ceiling`, ms };

      const abort = new AbortController();
      let finished = false;
      const ceiling = setTimeout(() => {
        settle(missed(elapsed()));
        // The backstop: a stage still running after its grace ignored its deadline; its thread is killed.
        // One not started yet is left queued: when a thread takes it, it sees its deadline passed and returns
        // at once (aborting it could kill a thread piscina already handed it to, still starting).
        setTimeout(() => {
          if (finished || Atomics.load(task.started, 0) !== STAGE_RUNNING) return;
          abort.abort();
          this.observer?.threadRespawned('backstop');
        }, this.settings.abortGraceMs);
      }, ceilingMs);

      const stageTask: StageTask = { ...task, deadlineAt: Date.now() + ceilingMs };
      this.inFlight++;
      this.piscina.run(stageTask, { signal: abort.signal }).then(
        (reply) => {
          finished = true;
          this.inFlight--;
          const ms = elapsed();
          this.observer?.stageTimed(task.stage, Math.max(0, ms - reply.runMs), reply.runMs);
          // a stage that gave up on its deadline missed it like one the timer caught
          settle(ms > ceilingMs || reply.result?.outcome === 'ceiling_exceeded' ? missed(ms) : { outcome: 'done', reply, ms });
        },
        (err: unknown) => {
          finished = true;
          this.inFlight--;
          const message = err instanceof Error ? err.message : String(err);
          if (abort.signal.aborted) return; // our own abort: the ceiling already settled the stage
          if (!this.closing) this.observer?.threadRespawned('exit');
          settle({ outcome: 'error', detail: `skill thread lost: ${message}`, ms: elapsed() });
        },
      );
    });
  }

  /**
   * Resolves once the warm threads have loaded their evaluators (model
   * weights included), so the first requests after a start do not miss their
   * ceilings on cold threads: each takes one task already past its deadline,
   * answered without evaluating.
   */
  async warm(stage: string): Promise<void> {
    const task = (): StageTask => ({ stage, surface: '', acting: false, body: new Uint8Array(0), deadlineAt: 0, started: new Int32Array(new SharedArrayBuffer(4)) });
    await Promise.all(Array.from({ length: this.settings.minThreads }, () => this.piscina.run(task())));
  }

  /** Ends every thread; stages still running settle as errors. */
  close(): Promise<void> {
    this.closing = true;
    return this.piscina.destroy();
  }
}
