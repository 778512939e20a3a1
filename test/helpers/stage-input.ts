import { Deadline, STARTED_SLOT_INTS, type StageContext, type StageInput, type StageTask } from '../../src/skills/stage.js';

/** A StageInput as the worker builds one, for calling an evaluator directly. */
export function stageInput(stage: string, surface: string, body: unknown, acting = true, context?: StageContext): StageInput {
  const bytes = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  return { stage, surface, acting, body: bytes, context, text: () => bytes.toString('utf8'), json: () => JSON.parse(bytes.toString('utf8')) as unknown };
}

/** a deadline far enough away never to pass during a test */
export const NO_DEADLINE = new Deadline(Number.MAX_SAFE_INTEGER);
/** a deadline already passed */
export const PASSED = new Deadline(0);

/**
 * A pool task whose body and started slot live in shared memory, as the
 * engine sends them: the body is a string sent as is, or JSON-encoded.
 */
export function sharedTask(stage: string, surface: string, body: unknown, acting = true, context?: StageContext): Omit<StageTask, 'deadlineAt'> {
  const bytes = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  const flagBytes = STARTED_SLOT_INTS * Int32Array.BYTES_PER_ELEMENT;
  const sab = new SharedArrayBuffer(flagBytes + bytes.length);
  const shared = new Uint8Array(sab, flagBytes);
  shared.set(bytes);
  return { stage, surface, acting, body: shared, ...(context && { context }), started: new Int32Array(sab, 0, STARTED_SLOT_INTS) };
}
