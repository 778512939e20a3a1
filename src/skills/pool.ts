import { Piscina } from 'piscina';
import { CATALOG } from '../providers/catalog.js';
import type { SkillRow } from './table.js';
import { STAGE_FINISHED, STAGE_RUNNING, STARTED_SLOT_INTS, type FollowerStage, type StageBatch, type StageReply, type StageTask, type WorkerEvaluators } from './stage.js';
import { starved, threadSched } from './thread-sched.js';

/**
 * The skill pool: the only module that knows threads (the only piscina
 * import). It runs one stage per task under that stage's wall-clock ceiling
 * and always settles with an outcome, never a rejection:
 *
 * - at the ceiling the stage is over for the request (`ceiling_exceeded`, or
 *   `loop_stalled` when the ceiling's own timer ran a whole ceiling late: the
 *   main loop, not the stage, was stuck);
 * - a stage still running `abortGraceMs` later ignored its cooperative
 *   deadline: its thread is terminated and replaced (a respawn, counted);
 *   stages handed to that thread behind it end as `error`; a thread starved
 *   of CPU meanwhile is given more time instead (see the backstop);
 * - a full pool (every thread holding `tasksPerThread` stages, `maxQueue`
 *   waiting) is `overloaded`; a thread that dies mid-stage is `error` (a
 *   respawn, counted).
 *
 * The shadow stages beside dispatch (measured, never acted on) run on
 * threads of their own at the lowest CPU priority (worker.ts): a request's
 * stage never waits behind them for a thread, and where the cores are busy
 * the scheduler runs the request path first. Sharing threads, a request's
 * guardrail stage on a single-connection 2 KB body waited 0.8 ms on average
 * behind the previous request's shadow classifier, 4 ms on a 32 KB body.
 *
 * Tasks carry no abort signal: piscina runs an abortable task alone on its
 * thread, so each would cost a thread wake-up and a sleep (about 50 µs of CPU
 * per stage here, measured). Without one, a thread takes the stages queued on
 * its port back to back, and the backstop terminates the thread itself, found
 * by the id the worker writes beside the stage's state. While every thread is
 * busy, the stages handed over in one turn of the event loop go as one task
 * (Lane).
 */

export interface PoolSettings {
  /** threads for the stages requests wait for */
  threads: number;
  minThreads: number;
  /** threads for the shadow stages beside dispatch, kept warm */
  shadowThreads: number;
  /** stages handed to one thread at a time: it runs them one after another (a second one waits on its port, not in a wake-up) */
  tasksPerThread: number;
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
  /** a task handed to a thread: one stage with its followers, or a batch of them */
  taskSent(): void;
}

/**
 * A follower that polls its deadline gives up at it and its thread goes on to
 * the next stage of the task; the pool steps in only for one that did not, a
 * few ms later, so that the two do not race over a stage ending on time.
 */
const FOLLOWER_SLACK_MS = 10;

/** How long the backstop spares a stage whose thread waits for a CPU instead of running (see backstop) */
const STARVED_PATIENCE_MS = 10_000;

export type StageRun =
  | { outcome: 'done'; reply: StageReply; ms: number }
  /** `lost`: the stage finished, but its result stayed in the thread with its task, which a stage after it failed */
  | { outcome: 'ceiling_exceeded' | 'loop_stalled' | 'overloaded' | 'error'; detail: string; ms: number; lost?: true };

/**
 * The worker entry beside this file: compiled JavaScript from dist/; under tsx
 * (tests, development) a shim that loads tsx into the thread first, since a
 * Node 20 worker does not inherit the parent's `--import` hooks.
 */
const workerFile = () => new URL(import.meta.url.endsWith('.ts') ? './worker-tsx.mjs' : './worker.js', import.meta.url);

type PoolTask = StageTask | StageBatch;
type PoolReply = StageReply | StageReply[];

/**
 * Bodies one batch may carry in all. On 32 KB bodies with PII redaction
 * acting, 50 connections on one core, unbounded batches finished some
 * requests in 7 ms and left others 350: p99 1.9 to 2.5 times the mean; with
 * this bound 1.3 to 1.7 times (six rounds of each), and 12.7 % less CPU per
 * request at the median with both builds loaded at once. Batches of short
 * prompts still carry dozens of stages, where the hop saved counts.
 */
const BATCH_MAX_BYTES = 64 * 1024;

/** What rejects a stage of a batch whose thread was lost at another of its stages: that one is the respawn, not this. */
class LostWithBatch extends Error {}

interface Waiting {
  task: StageTask;
  resolve(reply: StageReply): void;
  reject(err: unknown): void;
}

/** a task's started slots: its own stage's, then each follower's */
const slotsOf = (task: { started: Int32Array; followers?: readonly FollowerStage[] | undefined }): Int32Array[] => [task.started, ...(task.followers ?? []).map((f) => f.started)];

/**
 * One piscina pool and the stages handed to it. While some thread holds no
 * task, a stage goes to a thread at once; while every thread is busy, the
 * stages handed over in the same turn of the event loop go together at the
 * end of that turn, as one task (StageBatch) that one thread runs in order.
 * A task costs a thread wake-up, two messages, the loop's wake-up and
 * piscina's bookkeeping: on one core 37 µs of CPU per stage sent alone,
 * 8 µs per stage in batches of 16 (a stage that does nothing with its 2 KB
 * body), more than the guardrails' own work on a short prompt. Each stage
 * keeps its deadline and started slot, so its ceiling and the backstop see
 * it as before; a thread lost mid-batch fails every stage of the batch.
 * A batch replies once, at its end, so each of its stages waits for all of
 * them: a batch holds at most BATCH_MAX_BYTES of bodies, and the stages
 * beyond go as further tasks, in order.
 */
class Lane {
  /** tasks piscina holds: queued, running or replying */
  private sent = 0;
  private waiting: Waiting[] = [];

  constructor(
    readonly piscina: Piscina<PoolTask, PoolReply>,
    private readonly threads: number,
    private readonly observer: PoolObserver | undefined,
  ) {}

  /** stages waiting for the end of the turn to go together */
  get held(): number {
    return this.waiting.length;
  }

  run(task: StageTask): Promise<StageReply> {
    if (this.sent < this.threads && this.waiting.length === 0) return this.send(task) as Promise<StageReply>;
    return new Promise<StageReply>((resolve, reject) => {
      if (this.waiting.push({ task, resolve, reject }) === 1) setImmediate(() => this.flush());
    });
  }

  private send(task: PoolTask): Promise<PoolReply> {
    this.sent++;
    this.observer?.taskSent();
    const sent = this.piscina.run(task);
    const done = () => {
      this.sent--;
    };
    sent.then(done, done);
    return sent;
  }

  private flush(): void {
    const held = this.waiting.splice(0);
    let from = 0;
    let bytes = 0;
    for (let i = 0; i < held.length; i++) {
      const size = held[i]!.task.body.byteLength;
      if (i > from && bytes + size > BATCH_MAX_BYTES) {
        this.sendBatch(held.slice(from, i));
        from = i;
        bytes = 0;
      }
      bytes += size;
    }
    this.sendBatch(held.slice(from));
  }

  private sendBatch(batch: Waiting[]): void {
    if (batch.length === 1) {
      const [one] = batch as [Waiting];
      (this.send(one.task) as Promise<StageReply>).then(one.resolve, one.reject);
      return;
    }
    this.send({ batch: batch.map((w) => w.task) }).then(
      (replies) => batch.forEach((w, i) => w.resolve((replies as StageReply[])[i]!)),
      (err: unknown) => {
        // the stage running when the thread went failed (else the first not finished); the others lost it with that one
        const state = (w: Waiting) => slotsOf(w.task).map((slot) => Atomics.load(slot, 0));
        let failed = batch.findIndex((w) => state(w).includes(STAGE_RUNNING));
        if (failed < 0) failed = Math.max(0, batch.findIndex((w) => state(w).some((st) => st !== STAGE_FINISHED)));
        const message = err instanceof Error ? err.message : String(err);
        batch.forEach((w, i) => w.reject(i === failed ? err : new LostWithBatch(message)));
      },
    );
  }
}

export class SkillPool {
  /** the stages a request waits for before dispatch */
  private readonly requests: Lane;
  /** the shadow stages beside dispatch, on low-priority threads of their own */
  private readonly beside: Lane;
  private closing = false;
  /** stages a request waits for, handed to piscina and not yet settled by it: running, queued, or past their ceiling and not yet stopped */
  private inFlight = 0;
  /** the same for shadow work beside dispatch, bounded on its own so that it never fills the bound a request's stages are refused by */
  private besideInFlight = 0;
  /** threads the backstop is terminating: the stages queued behind the killed one fail with them, and are not respawns of their own */
  private terminating = 0;

  constructor(
    private readonly settings: PoolSettings,
    rows: readonly SkillRow[],
    private readonly observer?: PoolObserver,
  ) {
    const evaluators = rows.map((r) => ({ id: r.id, module: r.evaluator.module, export: r.evaluator.export }));
    const catalog = [...CATALOG];
    const pool = (minThreads: number, maxThreads: number, background: boolean) => {
      const workerData: WorkerEvaluators = { evaluators, catalog, ...(background && { background }) };
      const p = new Piscina<PoolTask, PoolReply>({
        filename: workerFile().href,
        minThreads,
        maxThreads,
        // the queue bound is kept here (inFlight), counting what each thread holds too
        idleTimeout: settings.idleTimeoutMs,
        concurrentTasksPerWorker: settings.tasksPerThread,
        workerData,
        // the pool times its stages itself (PoolObserver); piscina's own histograms would cost every task two more records
        recordTiming: false,
        // first come, first served: by default a task that finds every thread full goes to the back of the queue each time a thread
        // comes free, so under sustained load some stages wait behind every later one (a 32 KB body's p99 was 2.4 times its p50)
        stricterFIFO: true,
      });
      // a thread that dies between tasks is replaced by piscina; it is not any request's error
      p.on('error', () => undefined);
      return new Lane(p, maxThreads, observer);
    };
    this.requests = pool(settings.minThreads, settings.threads, false);
    this.beside = pool(settings.shadowThreads, settings.shadowThreads, true);
  }

  /** Threads alive now, stages waiting for one, and stages handed to the pool and not yet settled (a request's and beside dispatch, each bounded on its own). */
  get stats(): { threads: number; queued: number; inFlight: number } {
    return {
      threads: this.requests.piscina.threads.length + this.beside.piscina.threads.length,
      queued: this.requests.piscina.queueSize + this.requests.held + this.beside.piscina.queueSize + this.beside.held,
      inFlight: this.inFlight + this.besideInFlight,
    };
  }

  /**
   * Runs one stage; settles within `ceilingMs` (plus timer latency) with its
   * outcome. The task's body and flag should live in shared memory: they then
   * cross to the worker without a copy (a plain buffer would be copied).
   */
  async run(task: Omit<StageTask, 'deadlineAt' | 'followers'>, ceilingMs: number): Promise<StageRun> {
    return (await this.runWithFollowers(task, ceilingMs, []))[0]!;
  }

  /**
   * Runs one stage and, in the same task, the stages that follow it (each
   * under its own ceiling, from its own start; an acting one only while the
   * acting stages before it let the request go on). Settles with one run per
   * stage, the task's own first, once the task replies or as soon as one of
   * its stages misses its ceiling. `beside`: shadow work beside dispatch,
   * run on the shadow threads.
   */
  runWithFollowers(task: Omit<StageTask, 'deadlineAt' | 'followers'>, ceilingMs: number, followers: readonly FollowerStage[], beside = false): Promise<StageRun[]> {
    const t0 = performance.now();
    const elapsed = () => performance.now() - t0;
    const all = (run: StageRun, rest: StageRun = run) => [run, ...followers.map(() => rest)];
    if (ceilingMs === 0) return Promise.resolve(all({ outcome: 'ceiling_exceeded', detail: 'ceiling 0 ms', ms: 0 }));
    const { tasksPerThread, maxQueue } = this.settings;
    const threads = beside ? this.settings.shadowThreads : this.settings.threads;
    if ((beside ? this.besideInFlight : this.inFlight) >= threads * tasksPerThread + maxQueue) {
      return Promise.resolve(all({ outcome: 'overloaded', detail: `the skill pool is full (${threads} threads × ${tasksPerThread} stages, ${maxQueue} queued)`, ms: 0 }));
    }
    return new Promise<StageRun[]>((resolve) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const settle = (runs: StageRun[]) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(runs);
      };
      /** a ceiling run out late by a whole ceiling or more means the main loop, not the stage, was stuck */
      const missed = (ms: number, ceiling: number): StageRun =>
        ms - ceiling >= ceiling
          ? { outcome: 'loop_stalled', detail: `the event loop was stalled: ceiling of ${ceiling} ms noticed at ${Math.round(ms)} ms`, ms }
          : { outcome: 'ceiling_exceeded', detail: `past the ${ceiling} ms ceiling`, ms };

      let finished = false;
      let killed = false;
      /**
       * The backstop: a stage still running after its grace ignored its
       * deadline, and its thread is terminated; unless the thread spent the
       * grace waiting for a CPU rather than running (a shadow thread at the
       * lowest priority while requests keep the cores busy): a starved stage
       * is not stuck, and a thread killed for it would cost a respawn on a
       * machine already short of CPU. It is looked at again after each grace,
       * for STARVED_PATIENCE_MS at most.
       */
      const backstop = (started: Int32Array) => {
        const grace = this.settings.abortGraceMs;
        const tid = Atomics.load(started, 3);
        const since = Date.now();
        let before = threadSched(tid);
        const look = () => {
          if (finished || Atomics.load(started, 0) !== STAGE_RUNNING) return;
          const now = threadSched(tid);
          if (before !== undefined && now !== undefined && starved(before, now) && Date.now() - since < STARVED_PATIENCE_MS) {
            before = now;
            setTimeout(look, grace);
            return;
          }
          killed = this.terminate(Atomics.load(started, 1));
        };
        setTimeout(look, grace);
      };
      const t0Wall = Date.now();
      const deadlineAt = t0Wall + ceilingMs;
      const slots = slotsOf({ started: task.started, followers });
      const ceilings = [ceilingMs, ...followers.map((f) => f.ceilingMs)];
      // how often to look while the task's own stage runs: its ceiling, or the shortest follower's when shorter, but every few ms at most
      // (a follower whose ceiling is 0 misses at its start, in the thread, and needs no watching)
      const followerMs = followers.length === 0 ? Infinity : Math.max(5, Math.min(...followers.map((f) => f.ceilingMs)));
      const shortest = Math.min(ceilingMs, followerMs);
      /** Runs for a task that failed at stage `i`: those before it finished, their results lost with it; those after it never ran. */
      const byStage = (i: number, failed: StageRun, before: string, after: string): StageRun[] => {
        const lost: StageRun = { outcome: 'error', detail: `its result was lost: a stage run after it on the same thread ${before}`, ms: elapsed(), lost: true };
        const notRun: StageRun = { outcome: 'ceiling_exceeded', detail: `not run: the stage before it in its task ${after}`, ms: 0 };
        return slots.map((_, k) => (k < i ? lost : k > i ? notRun : failed));
      };
      /**
       * Watches the task's stages in turn, each against its own ceiling: the
       * task's own from when it was sent (its wait for a thread counts), a
       * follower's from its own start, which the worker writes beside its state.
       */
      const watch = (from: number) => {
        let i = from;
        while (i < slots.length && Atomics.load(slots[i]!, 0) === STAGE_FINISHED) i++;
        // every stage finished: the reply is on its way
        if (i === slots.length) return;
        const running = Atomics.load(slots[i]!, 0) === STAGE_RUNNING;
        const startedAt = i === 0 ? t0Wall : running ? deadlineAt + Atomics.load(slots[i]!, 2) : Date.now();
        const due = (i === 0 ? deadlineAt : startedAt + ceilings[i]! + FOLLOWER_SLACK_MS) - Date.now();
        if (due > 0) {
          // no message says when a stage ends: while the task's own runs, look again within the shortest follower ceiling
          timer = setTimeout(() => watch(i), i === 0 ? Math.min(due, shortest) : due);
          return;
        }
        // One not started yet is left queued: when a thread takes it, it sees its deadline passed and returns at once.
        settle(byStage(i, missed(Date.now() - startedAt, ceilings[i]!), 'overran its ceiling', 'missed its ceiling'));
        backstop(slots[i]!);
      };
      timer = setTimeout(() => watch(0), shortest);

      const stageTask: StageTask = { ...task, deadlineAt, ...(followers.length > 0 && { followers: [...followers] }) };
      const held = (n: number) => (beside ? (this.besideInFlight += n) : (this.inFlight += n));
      held(1);
      (beside ? this.beside : this.requests).run(stageTask).then(
        (reply) => {
          finished = true;
          held(-1);
          const ms = elapsed();
          this.observer?.stageTimed(task.stage, Math.max(0, ms - reply.runMs), reply.runMs);
          // a stage that gave up on its deadline missed it like one the timer caught
          const own: StageRun = reply.result?.outcome === 'ceiling_exceeded' ? missed(ms, ceilingMs) : { outcome: 'done', reply, ms };
          settle([own, ...followers.map((f, i) => this.followerRun(f, reply.followers?.[i]))]);
        },
        (err: unknown) => {
          finished = true;
          held(-1);
          if (killed) return; // the backstop's own kill: the ceiling already settled the stage
          const message = err instanceof Error ? err.message : String(err);
          if (this.terminating > 0) return settle(all({ outcome: 'error', detail: `skill thread terminated by the backstop while this stage waited on it: ${message}`, ms: elapsed() }));
          if (err instanceof LostWithBatch) return settle(all({ outcome: 'error', detail: `skill thread lost at another stage of its batch: ${message}`, ms: elapsed() }));
          if (!this.closing) this.observer?.threadRespawned('exit');
          // the stage that was running when the thread died is the one that failed
          const dying = slots.findIndex((slot) => Atomics.load(slot, 0) === STAGE_RUNNING);
          settle(byStage(Math.max(dying, 0), { outcome: 'error', detail: `skill thread lost: ${message}`, ms: elapsed() }, 'lost its thread', 'lost its thread'));
        },
      );
    });
  }

  /** A follower's run from its reply: absent when the stage before it stopped the request, so it did not run. */
  private followerRun(f: FollowerStage, reply: StageReply | undefined): StageRun {
    if (reply === undefined) return { outcome: 'ceiling_exceeded', detail: 'not run: the stage before it in its task did not let the request go on', ms: 0 };
    this.observer?.stageTimed(f.stage, 0, reply.runMs);
    return reply.result?.outcome === 'ceiling_exceeded' ? { outcome: 'ceiling_exceeded', detail: `past the ${f.ceilingMs} ms ceiling`, ms: reply.runMs } : { outcome: 'done', reply, ms: reply.runMs };
  }

  /** Terminates the thread with this id (piscina replaces it); false when it is already gone. */
  private terminate(threadId: number): boolean {
    const thread = [...this.requests.piscina.threads, ...this.beside.piscina.threads].find((w) => w.threadId === threadId);
    if (thread === undefined) return false;
    this.terminating++;
    // piscina fails the thread's stages in its own exit listener; the count drops after their handlers have run
    thread.once('exit', () => setImmediate(() => this.terminating--));
    void thread.terminate();
    this.observer?.threadRespawned('backstop');
    return true;
  }

  /**
   * Resolves once the warm threads have loaded their evaluators (model
   * weights included), so the first requests after a start do not miss their
   * ceilings on cold threads: each takes one task already past its deadline,
   * answered without evaluating.
   */
  async warm(stage: string): Promise<void> {
    const task = (): StageTask => ({ stage, surface: '', acting: false, body: new Uint8Array(0), deadlineAt: 0, started: new Int32Array(new SharedArrayBuffer(STARTED_SLOT_INTS * 4)) });
    await Promise.all([
      // straight to piscina: one task per thread, never a batch
      ...Array.from({ length: this.settings.minThreads }, () => this.requests.piscina.run(task())),
      ...Array.from({ length: this.settings.shadowThreads }, () => this.beside.piscina.run(task())),
    ]);
  }

  /** Ends every thread; stages still running settle as errors. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all([this.requests.piscina.destroy(), this.beside.piscina.destroy()]);
  }
}
