import { readFileSync, readlinkSync } from 'node:fs';

/**
 * What Linux's scheduler says of one thread of this process: how long it has
 * run on a CPU, and whether it is runnable now (running or waiting for a CPU)
 * rather than asleep. The pool's backstop reads it to tell a stage stuck in a
 * loop (it runs) from one whose thread gets no CPU (it waits to run: a shadow
 * thread at the lowest priority on a busy machine).
 */
export interface ThreadSched {
  runNs: number;
  runnable: boolean;
  /** when it was read (performance.now(), ms) */
  at: number;
}

/** The kernel's id of the calling thread, 0 where there is no /proc/thread-self (not Linux). */
export function kernelThreadId(): number {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').at(-1));
    return Number.isInteger(tid) && tid > 0 ? tid : 0;
  } catch {
    return 0;
  }
}

/** The thread's run time so far (/proc/self/task/<tid>/schedstat) and state (its stat); undefined where they cannot be read. */
export function threadSched(tid: number): ThreadSched | undefined {
  if (tid <= 0) return undefined;
  try {
    const runNs = Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'latin1').split(' ')[0]);
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'latin1');
    // the state follows the command name, which is in parentheses and may hold anything
    const state = stat.charAt(stat.lastIndexOf(')') + 2);
    return Number.isFinite(runNs) ? { runNs, runnable: state === 'R', at: performance.now() } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Between two readings of one thread: is it waiting for a CPU, having run
 * less than a fifth of the time between them? (Run time of a thread waiting
 * on a run queue is only accounted once it runs, so the wait itself cannot be
 * read.) A thread looping at the priority of the others gets a fair share of
 * a busy core, a third beside two others, and is not starved; a shadow
 * thread at the lowest priority behind request work gets a few percent.
 */
export const starved = (before: ThreadSched, after: ThreadSched): boolean => after.runnable && (after.runNs - before.runNs) / 1e6 < (after.at - before.at) / 5;
