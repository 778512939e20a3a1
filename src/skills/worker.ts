import { workerData } from 'node:worker_threads';
import { applyOperatorCatalog } from '../providers/catalog.js';
import { Deadline, STAGE_FINISHED, STAGE_RUNNING, type Evaluator, type StageInput, type StageReply, type StageResult, type StageTask, type WorkerEvaluators } from './stage.js';

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

const data = workerData as WorkerEvaluators;
// the main thread's catalog holds every shipped model, so applying it over the shipped one reproduces it
if (data.catalog !== undefined) applyOperatorCatalog(data.catalog);
const evaluators = await loadEvaluators(data);

function stageInput(task: StageTask): StageInput {
  let text: string | undefined;
  let json: { value: unknown } | undefined;
  const { body } = task;
  const input: StageInput = {
    stage: task.stage,
    surface: task.surface,
    acting: task.acting,
    body,
    context: task.context,
    // Buffer reads shared memory too, where TextDecoder refuses it
    text: () => (text ??= Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8')),
    json: () => (json ??= { value: JSON.parse(input.text()) }).value,
  };
  return input;
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
  if (result.answer !== undefined) out.answer = { ...result.answer, body: shared(result.answer.body) };
  return out;
}

const ceilingMissed = (): StageResult => ({ outcome: 'ceiling_exceeded', detail: { reason: 'the deadline passed before the stage started' } });

export default async function runStage(task: StageTask): Promise<StageReply> {
  Atomics.store(task.started, 0, STAGE_RUNNING);
  const t0 = performance.now();
  const deadline = new Deadline(task.deadlineAt);
  const evaluate = evaluators.get(task.stage);
  try {
    if (evaluate === undefined) throw new Error(`no evaluator for stage ${task.stage}`);
    const result = deadline.expired() ? ceilingMissed() : sharedResult(await evaluate(stageInput(task), deadline));
    return { result, runMs: performance.now() - t0 };
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err), runMs: performance.now() - t0 };
  } finally {
    // from here the backstop leaves this thread alone: the reply is on its way
    Atomics.store(task.started, 0, STAGE_FINISHED);
  }
}
