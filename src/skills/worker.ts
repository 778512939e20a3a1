import { setPriority } from 'node:os';
import { threadId, workerData } from 'node:worker_threads';
import { applyOperatorCatalog } from '../providers/catalog.js';
import { Deadline, STAGE_FINISHED, STAGE_RUNNING, type Evaluator, type StageInput, type StageBatch, type StageReply, type StageResult, type StageTask, type WorkerEvaluators } from './stage.js';
import { kernelThreadId } from './thread-sched.js';

/**
 * The skill pool's worker entry. At start it loads every evaluator the pool
 * names (model weights and tables load here, once per thread, never per
 * request); each task names its stage and runs that evaluator. An evaluator
 * that throws is reported as an error, so a task settles with a reply unless
 * the thread itself dies.
 */

async function loadEvaluators({ evaluators }: WorkerEvaluators): Promise<Map<string, Evaluator>> {
  const out = new Map<string, Evaluator>();
  for (const e of evaluators) {
    const mod = (await import(e.module)) as Record<string, unknown>;
    const fn = mod[e.export];
    if (typeof fn !== 'function') throw new Error(`skill ${e.id}: ${e.module} does not export a function ${e.export}`);
    out.set(e.id, fn as Evaluator);
  }
  return out;
}

/**
 * The nice value of a shadow thread: the lowest priority. On Linux a nice
 * value belongs to one thread, and setPriority's pid 0 is the calling one,
 * so only this thread yields; where the platform refuses, it keeps the
 * process's priority and still never holds up a request's stages.
 */
const BACKGROUND_NICE = 19;

const data = workerData as WorkerEvaluators;
if (data.background) {
  try {
    setPriority(BACKGROUND_NICE);
  } catch {
    // not permitted here: the thread runs at the process's priority
  }
}
// the main thread's catalog holds every shipped model, so applying it over the shipped one reproduces it
if (data.catalog !== undefined) applyOperatorCatalog(data.catalog);
const evaluators = await loadEvaluators(data);

/** One body's text and JSON, decoded once for every stage of the task that reads these bytes. */
function reading(body: Uint8Array): Pick<StageInput, 'body' | 'text' | 'json'> {
  let text: string | undefined;
  let json: { value: unknown } | undefined;
  // Buffer reads shared memory too, where TextDecoder refuses it
  const decode = () => (text ??= Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
  return { body, text: decode, json: () => (json ??= { value: JSON.parse(decode()) }).value };
}

function stageInput(task: StageTask, read: Pick<StageInput, 'body' | 'text' | 'json'>, stage = task.stage, acting = task.acting): StageInput {
  return { stage, surface: task.surface, acting, context: task.context, ...read };
}

/**
 * A body the stage produced, in shared memory: the copy is made here, off the
 * main loop, and the main thread and the following stages then read it in place.
 */
function shared(bytes: Uint8Array): Uint8Array {
  if (bytes.buffer instanceof SharedArrayBuffer) return bytes;
  const out = new Uint8Array(new SharedArrayBuffer(bytes.byteLength));
  out.set(bytes);
  return out;
}

function sharedResult(result: StageResult): StageResult {
  const out = { ...result };
  if (result.change?.body !== undefined) out.change = { ...result.change, body: shared(result.change.body) };
  if (result.answer !== undefined && 'body' in result.answer) out.answer = { ...result.answer, body: shared(result.answer.body) };
  return out;
}

const KERNEL_TID = kernelThreadId();

const ceilingMissed = (): StageResult => ({ outcome: 'ceiling_exceeded', detail: { reason: 'the deadline passed before the stage started' } });

/** One evaluation in its started slot: the backstop sees it running on this thread until it returns. */
async function evaluate(task: StageTask, stage: string, started: Int32Array, deadline: Deadline, input: () => StageInput): Promise<StageReply> {
  Atomics.store(started, 1, threadId);
  Atomics.store(started, 2, Date.now() - task.deadlineAt);
  Atomics.store(started, 3, KERNEL_TID);
  Atomics.store(started, 0, STAGE_RUNNING);
  const t0 = performance.now();
  try {
    const evaluator = evaluators.get(stage);
    if (evaluator === undefined) throw new Error(`no evaluator for stage ${stage}`);
    const result = deadline.expired() ? ceilingMissed() : sharedResult(await evaluator(input(), deadline));
    return { result, runMs: performance.now() - t0 };
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err), runMs: performance.now() - t0 };
  } finally {
    // from here the backstop leaves this thread alone: the reply is on its way
    Atomics.store(started, 0, STAGE_FINISHED);
  }
}

/** Does the request go on after this reply, so that stages deciding on what goes upstream still matter? */
const goesOn = (reply: StageReply) => reply.result !== undefined && reply.result.outcome !== 'ceiling_exceeded' && !reply.result.refuse && !reply.result.answer;

async function runStage(task: StageTask): Promise<StageReply> {
  let read = reading(task.body);
  let goingOn = true;
  /** an acting stage's reply: it stops the stages after it, or hands them the body it produced; a shadow one's changes nothing */
  const after = (acting: boolean, reply: StageReply) => {
    if (!acting) return;
    if (!goesOn(reply)) goingOn = false;
    else if (reply.result?.change?.body !== undefined) read = reading(reply.result.change.body);
  };
  const own = read;
  const reply = await evaluate(task, task.stage, task.started, new Deadline(task.deadlineAt), () => stageInput(task, own));
  if (task.followers === undefined) return reply;
  after(task.acting, reply);
  const followers: StageReply[] = [];
  for (const f of task.followers) {
    if (!goingOn) break;
    const input = read;
    const r = await evaluate(task, f.stage, f.started, new Deadline(Date.now() + f.ceilingMs), () => stageInput(task, input, f.stage, f.acting));
    followers.push(r);
    after(f.acting, r);
  }
  return { ...reply, followers };
}

/** The pool's task: one stage (with its followers), or a batch of them run one after another, each replied in order. */
export default async function runTask(task: StageTask | StageBatch): Promise<StageReply | StageReply[]> {
  if (!('batch' in task)) return runStage(task);
  const replies: StageReply[] = [];
  for (const t of task.batch) replies.push(await runStage(t));
  return replies;
}
