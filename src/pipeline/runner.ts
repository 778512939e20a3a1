import { CONTINUE, type Call, type Stage, type StageName, type Verdict } from './types.js';

/** What the runner needs of a request's context: the call a rewrite changes, and where it is. */
export interface Runnable {
  call: Call | undefined;
  /** the stage running or last run (a fault is attributed to it) */
  at: StageName;
}

/**
 * Runs `stages` in order from `from` (fastify lib/hooks.js's shape: one
 * fixed, named list, one runner). A continue goes on; a rewrite changes the
 * call's body or model and goes on; an answer or a refusal ends the run and is
 * returned. A stage answering synchronously is followed synchronously, so a
 * request waits on no promise no stage made.
 */
export function runStages<C extends Runnable>(stages: readonly Stage<C>[], ctx: C, from = 0): Verdict | Promise<Verdict> {
  for (let i = from; i < stages.length; i++) {
    const stage = stages[i] as Stage<C>;
    ctx.at = stage.name;
    const out = stage.run(ctx);
    if (out instanceof Promise) return out.then((v) => (settled(ctx, v) ? runStages(stages, ctx, i + 1) : v));
    if (!settled(ctx, out)) return out;
  }
  return CONTINUE;
}

/** true when the run goes on after `v` (applying a rewrite to the call) */
function settled(ctx: Runnable, v: Verdict): boolean {
  if (v.kind === 'continue') return true;
  if (v.kind !== 'rewrite') return false;
  const call = ctx.call;
  if (!call) throw new Error('a stage rewrote the call before the plan made one');
  if (v.body !== undefined) call.body = v.body;
  if (v.model !== undefined) call.model = v.model;
  return true;
}
