import type { TaskTotals } from '../../lifecycle/samples.js';

/**
 * How scorecard samples sit in Redis: hashes per tenant, skill and UTC minute,
 * and per tenant, skill and UTC hour (RedisKeys.samples; every request is
 * added into both), whose fields name the key, the key's latest
 * transition of the skill when the request was served (its epoch: the sweep
 * judges a mode only by requests served under it), the arm, and what the
 * field holds:
 *   c  the arm's totals (JSON, ArmTotals)
 *   t  one task's figures (JSON array, see taskValue)
 *   u  a session of requests whose task is a task id (an assignment unit)
 */

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const minuteOf = (ms: number): number => Math.floor(ms / MINUTE_MS);
export const hourOf = (ms: number): number => Math.floor(ms / HOUR_MS);
/**
 * Minute hashes serve only the start of windows of up to an hour (a window's
 * first partial hour); kept two hours, past the start of any such window.
 */
export const MINUTES_KEPT_MS = 2 * HOUR_MS;
/** the longest window whose start is counted in whole minutes; longer ones count whole hours */
export const MINUTE_WINDOW_MAX_MS = HOUR_MS;

export type SampleOp = 'c' | 't' | 'u';

export interface SampleField {
  op: SampleOp;
  keyId: string;
  epoch: string;
  arm: string;
  /** the task's feedback key (t) or the session id (u); empty for totals */
  item: string;
}

/**
 * Parts are separated by NUL, which no key id, transition id or arm holds;
 * the item comes last and is taken whole, so a caller's session or task id
 * may hold anything.
 */
const SEP = '\u0000';

export const sampleField = (f: SampleField): string => `${f.op}${SEP}${f.keyId}${SEP}${f.epoch}${SEP}${f.arm}${SEP}${f.item}`;

export function parseSampleField(field: string): SampleField | undefined {
  const a = field.indexOf(SEP);
  const b = field.indexOf(SEP, a + 1);
  const c = field.indexOf(SEP, b + 1);
  const d = field.indexOf(SEP, c + 1);
  if (a < 0 || b < 0 || c < 0 || d < 0) return undefined;
  const op = field.slice(0, a);
  if (op !== 'c' && op !== 't' && op !== 'u') return undefined;
  return { op, keyId: field.slice(a + 1, b), epoch: field.slice(b + 1, c), arm: field.slice(c + 1, d), item: field.slice(d + 1) };
}

/** a task's figures as the merge script reads them: [requests, cost, first, last, last_latency, session] */
export const taskValue = (t: TaskTotals): string => JSON.stringify([t.requests, t.cost, t.first, t.last, t.lastLatency, t.session]);

export function parseTaskValue(value: string): TaskTotals {
  const [requests, cost, first, last, lastLatency, session] = JSON.parse(value) as [number, number, number, number, number, string | null];
  return { requests, cost, first, last, lastLatency, session };
}
