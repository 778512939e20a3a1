import { HOUR_MS, periodOf, type RollupPeriod } from './keys.js';
import type { Bucket } from './usage.js';

/** One rollup hash a usage read sums: its period and number. */
export interface RollupRead {
  period: RollupPeriod;
  n: number;
}

/** windows up to this long are summed from minute rollups */
export const MINUTE_WINDOW_MAX_MS = HOUR_MS;
/** a minute rollup is kept this long past its minute: longer than any window read from minutes */
export const MINUTE_ROLLUP_KEEP_MS = 2 * MINUTE_WINDOW_MAX_MS;

const HOURS_PER_DAY = 24;

const range = (period: RollupPeriod, first: number, last: number): RollupRead[] => {
  const out: RollupRead[] = [];
  for (let n = first; n <= last; n++) out.push({ period, n });
  return out;
};

/**
 * The rollup hashes whose sum is the usage of the window ending at `nowMs`,
 * its first period counted whole:
 * - a window up to an hour: its UTC minutes;
 * - a longer one by the hour bucket: its UTC hours;
 * - a longer one otherwise: the hours of its first, partial UTC day, then
 *   whole UTC days (today's rollup holds today so far). A UTC day's rollup is
 *   the sum of its 24 hours, kept by the same append.
 * The cost of a read grows with the window's periods and the distinct
 * dimension tuples in them, never with the rows.
 */
export function rollupReads(nowMs: number, windowMs: number, bucket: Bucket | undefined): RollupRead[] {
  const startMs = nowMs - windowMs;
  if (windowMs <= MINUTE_WINDOW_MAX_MS) return range('minute', periodOf('minute', startMs), periodOf('minute', nowMs));
  const first = periodOf('hour', startMs);
  const last = periodOf('hour', nowMs);
  const firstDay = periodOf('day', startMs);
  const lastDay = periodOf('day', nowMs);
  if (bucket === 'hour' || firstDay === lastDay) return range('hour', first, last);
  const firstDayHour = firstDay * HOURS_PER_DAY;
  if (first === firstDayHour) return range('day', firstDay, lastDay);
  return [...range('hour', first, firstDayHour + HOURS_PER_DAY - 1), ...range('day', firstDay + 1, lastDay)];
}
