import { type Counts, type Dimension, DIMENSION_NAMES, TUPLE_SEP, type UsageQuery } from './usage.js';

/**
 * Usage projections: besides the rollup by every dimension (one field per
 * distinct combination of all values, which can run to tens of thousands a
 * day), a finished hour or day is summed once (usage-compactor.ts) by every
 * single dimension and every pair of dimensions, and in total. A read whose
 * group_by and filters name at most two dimensions sums the projection on
 * them, a few hundred fields a period at most, instead of every combination.
 * A period's marker says its projections are whole: the append script deletes
 * it when a late row adds to the period, and the period is read from every
 * combination again until it is summed anew.
 *
 * A projection holds only cells whose values are all set: a row without a
 * team adds nothing to the projections on team (most rows leave most header
 * dimensions unset, so this keeps the write small). The cells with no value
 * are derived on read, exactly, by subtraction: the rows with a model and no
 * team are the model's single-dimension cell less its cells paired with a
 * team; the rows with neither are the total less the rows with one, plus the
 * rows with both.
 */

/** the name of the projection on `dims` (in DIMENSION_NAMES order); the total is '*' */
export const projectionName = (dims: readonly Dimension[]): string => (dims.length === 0 ? '*' : dims.join('+'));
export const TOTAL = projectionName([]);
/** the name of a period's marker: WHOLE once its projections hold every row of its rollup */
export const MARKER = '!';
export const WHOLE = 'whole';

/** pair names by dimension position, made once */
const PAIR_NAMES: string[][] = DIMENSION_NAMES.map((a, i) => DIMENSION_NAMES.map((b, j) => (i < j ? projectionName([a, b]) : '')));

/** Calls `cell(projection, field)` for every projection cell a rollup tuple (values in DIMENSION_NAMES order, '' for none) adds to. */
export function forEachProjectionCell(values: readonly string[], cell: (projection: string, field: string) => void): void {
  cell(TOTAL, '');
  for (let i = 0; i < values.length; i++) {
    const a = values[i] as string;
    if (a === '') continue;
    cell(DIMENSION_NAMES[i] as string, a);
    const pairs = PAIR_NAMES[i] as string[];
    for (let j = i + 1; j < values.length; j++) {
      const b = values[j] as string;
      if (b !== '') cell(pairs[j] as string, a + TUPLE_SEP + b);
    }
  }
}

/** the dimensions a query names (group_by and filters) in DIMENSION_NAMES order, when a projection answers it */
export function projectionFor(query: UsageQuery): Dimension[] | undefined {
  const named = new Set<Dimension>([...query.groupBy, ...(Object.keys(query.filters) as Dimension[])]);
  if (named.size > 2) return undefined;
  return DIMENSION_NAMES.filter((d) => named.has(d));
}

/** the projections a read on `dims` sums per period: the total, each single dimension, the pair */
export function projectionsRead(dims: readonly Dimension[]): string[] {
  const out = [TOTAL, ...dims];
  if (dims.length === 2) out.push(projectionName(dims));
  return out;
}

export const parseCounts = (value: string): Counts => {
  const c = value.split(' ').map(Number);
  return [c[0] ?? 0, c[1] ?? 0, c[2] ?? 0, c[3] ?? 0, c[4] ?? 0];
};

type Cells = ReadonlyMap<string, Counts>;

const minus = (a: Counts, b: Counts): Counts => [a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3], a[4] - b[4]];
const plus = (a: Counts, b: Counts): Counts => [a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4]];
const ZERO: Counts = [0, 0, 0, 0, 0];
const sum = (cells: Iterable<Counts>): Counts => {
  let s = ZERO;
  for (const c of cells) s = plus(s, c);
  return s;
};

/**
 * One period's usage on `dims`, from the projections projectionsRead named
 * (in that order): every group of rows with its values of `dims` (fields
 * joined by TUPLE_SEP, '' for none), those without values derived.
 */
export function projectedCells(dims: readonly Dimension[], projections: readonly Cells[]): Map<string, Counts> {
  const [total, a, b, pair] = projections as [Cells, Cells?, Cells?, Cells?];
  const out = new Map<string, Counts>();
  const put = (field: string, c: Counts) => {
    if (c[0] > 0) out.set(field, c);
  };
  const all = total.get('') ?? ZERO;
  if (dims.length === 0 || a === undefined) {
    put('', all);
    return out;
  }
  if (dims.length === 1 || b === undefined || pair === undefined) {
    for (const [v, c] of a) put(v, c);
    put('', minus(all, sum(a.values())));
    return out;
  }
  // with both values, then the rest of each single dimension's cell, then neither
  const pairedA = new Map<string, Counts>();
  const pairedB = new Map<string, Counts>();
  for (const [field, c] of pair) {
    put(field, c);
    const [va, vb] = field.split(TUPLE_SEP) as [string, string];
    pairedA.set(va, plus(pairedA.get(va) ?? ZERO, c));
    pairedB.set(vb, plus(pairedB.get(vb) ?? ZERO, c));
  }
  for (const [va, c] of a) put(va + TUPLE_SEP, minus(c, pairedA.get(va) ?? ZERO));
  for (const [vb, c] of b) put(TUPLE_SEP + vb, minus(c, pairedB.get(vb) ?? ZERO));
  put(TUPLE_SEP, plus(minus(minus(all, sum(a.values())), sum(b.values())), sum(pair.values())));
  return out;
}
