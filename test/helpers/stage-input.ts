import { Deadline, type StageContext, type StageInput } from '../../src/skills/stage.js';

/** A StageInput as the worker builds one, for calling an evaluator directly. */
export function stageInput(stage: string, surface: string, body: unknown, acting = true, context?: StageContext): StageInput {
  const bytes = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  return { stage, surface, acting, body: bytes, context, text: () => bytes.toString('utf8'), json: () => JSON.parse(bytes.toString('utf8')) as unknown };
}

/** a deadline far enough away never to pass during a test */
export const NO_DEADLINE = new Deadline(Number.MAX_SAFE_INTEGER);
/** a deadline already passed */
export const PASSED = new Deadline(0);
