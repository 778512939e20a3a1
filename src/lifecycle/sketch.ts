/**
 * Percentiles that merge: a value is counted in a logarithmic bucket (bucket i
 * holds (γ^(i-1), γ^i]), so the counts of two sets of requests add up to the
 * counts of their union, in any order and on any replica. A percentile read
 * back is its bucket's midpoint, within 1% of the true value (relative
 * accuracy (γ-1)/(γ+1), the DDSketch construction).
 *
 * A sketch is a plain array, so it travels as compact JSON and merges as
 * numbers: [values at or below zero, the first bucket's index, the counts of
 * the buckets from it on]. The Redis store's merge script (samples-add.lua)
 * merges the same arrays the same way.
 */

const GAMMA = 1.02;
const LN_GAMMA = Math.log(GAMMA);

export type Sketch = number[];

const ZEROS = 0;
const FIRST = 1;
const COUNTS = 2;

const bucketOf = (value: number): number => Math.ceil(Math.log(value) / LN_GAMMA);

/** A sketch of one value. */
export const sketchOf = (value: number): Sketch => (value > 0 ? [0, bucketOf(value), 1] : [1, 0]);

/** Adds `b` into `a` (changed in place when its range already covers b's), returning the sum. */
export function mergeSketch(a: Sketch | undefined, b: Sketch): Sketch {
  if (a === undefined) return [...b];
  a[ZEROS] = (a[ZEROS] as number) + (b[ZEROS] as number);
  const bCount = b.length - COUNTS;
  if (bCount === 0) return a;
  const aCount = a.length - COUNTS;
  if (aCount === 0) return [a[ZEROS] as number, ...b.slice(FIRST)];
  const aFirst = a[FIRST] as number;
  const bFirst = b[FIRST] as number;
  let out = a;
  if (bFirst < aFirst) {
    // widen downwards: a new array with a's counts shifted up
    out = [a[ZEROS] as number, bFirst, ...new Array<number>(aFirst - bFirst).fill(0), ...a.slice(COUNTS)];
  }
  const offset = COUNTS + bFirst - (out[FIRST] as number);
  // widen upwards with zeros first: writing past the end would leave holes
  for (let i = out.length; i < offset + bCount; i++) out.push(0);
  for (let i = 0; i < bCount; i++) out[offset + i] = (out[offset + i] as number) + (b[COUNTS + i] as number);
  return out;
}

/**
 * Adds one value into `a` (in place when its range already covers the
 * value's bucket): the same as merging `sketchOf(value)`, without the sketch
 * of one value, and without touching the other buckets; a read adds every
 * sampled request's latencies this way.
 */
export function addValue(a: Sketch | undefined, value: number): Sketch {
  if (a === undefined || (a.length === COUNTS && value > 0)) return mergeSketch(a, sketchOf(value));
  if (!(value > 0)) {
    a[ZEROS] = (a[ZEROS] as number) + 1;
    return a;
  }
  const at = COUNTS + bucketOf(value) - (a[FIRST] as number);
  if (at < COUNTS) return mergeSketch(a, sketchOf(value));
  for (let i = a.length; i <= at; i++) a.push(0);
  a[at] = (a[at] as number) + 1;
  return a;
}

/** the value a bucket stands for: the midpoint (relative to its bounds) of its range, at the rows' 2 decimals */
const valueOf = (bucket: number): number => Math.round(((2 * GAMMA ** bucket) / (GAMMA + 1)) * 100) / 100;

export interface Spread {
  p50: number | null;
  p95: number | null;
  p99: number | null;
}

const NONE: Spread = { p50: null, p95: null, p99: null };

/** Nearest-rank p50, p95 and p99 of a sketch; nulls when it counted nothing. */
export function spreadOf(sketch: Sketch | undefined): Spread {
  if (sketch === undefined) return NONE;
  let total = 0;
  for (let i = COUNTS; i < sketch.length; i++) total += sketch[i] as number;
  const zeros = sketch[ZEROS] as number;
  total += zeros;
  if (total === 0) return NONE;
  const at = (p: number): number => {
    const rank = Math.max(1, Math.ceil((p / 100) * total));
    if (rank <= zeros) return 0;
    let seen = zeros;
    for (let i = COUNTS; i < sketch.length; i++) {
      seen += sketch[i] as number;
      if (seen >= rank) return valueOf((sketch[FIRST] as number) + i - COUNTS);
    }
    return valueOf((sketch[FIRST] as number) + sketch.length - 1 - COUNTS);
  };
  return { p50: at(50), p95: at(95), p99: at(99) };
}
