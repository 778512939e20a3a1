import { DAY_MS, HOUR_MS } from './keys.js';
import type { RequestRow } from './row.js';

/** Usage dimensions by name, with the row column each reads. */
export const USAGE_DIMENSIONS = {
  endpoint: 'surface',
  provider: 'provider',
  channel: 'channel',
  model: 'model',
  team: 'team',
  feature: 'use_case',
  key: 'key_id',
  status: 'status',
  cache_tier: 'cache_tier',
  tier: 'tier',
  egress_mode: 'egress_mode',
  relay_reason: 'relay_reason',
  optimization_state: 'optimization_state',
  route: 'model_serving_route',
  desk: 'desk',
  pm: 'pm',
  strategy: 'strategy',
  cost_centre: 'cost_centre',
  project: 'project',
} as const satisfies Record<string, keyof RequestRow>;

export type Dimension = keyof typeof USAGE_DIMENSIONS;
export const DIMENSION_NAMES = Object.keys(USAGE_DIMENSIONS) as Dimension[];
/** other spellings accepted for a dimension */
export const DIMENSION_ALIASES: Readonly<Record<string, Dimension>> = { cost_center: 'cost_centre' };

export const dimensionNamed = (name: string): Dimension | undefined =>
  name in USAGE_DIMENSIONS ? (name as Dimension) : DIMENSION_ALIASES[name];

/** joins the dimension values of a rollup field */
export const TUPLE_SEP = '\x1f';

/** a control character: a caller's label or model name may carry one, and TUPLE_SEP (and the append's separator) are such */
const isControl = (code: number): boolean => code < 0x20 || code === 0x7f;
const cellOf = (v: unknown): string => {
  const s = String(v);
  for (let i = 0; i < s.length; i++) {
    if (isControl(s.charCodeAt(i))) return Array.from(s, (ch) => (isControl(ch.charCodeAt(0)) ? '?' : ch)).join('');
  }
  return s;
};

/** A row's values of every dimension, in DIMENSION_NAMES order, as one rollup field ('' for none; a control character as '?'). */
export function dimensionTuple(row: RequestRow): string {
  let out = '';
  for (let i = 0; i < DIMENSION_NAMES.length; i++) {
    const v = row[USAGE_DIMENSIONS[DIMENSION_NAMES[i] as Dimension]];
    out += (i === 0 ? '' : TUPLE_SEP) + (v === null ? '' : cellOf(v));
  }
  return out;
}

/** The counters of one rollup cell (costs in nano-dollars, so sums stay exact integers). */
export interface UsageCounters {
  requests: number;
  costNano: number;
  tokensIn: number;
  tokensOut: number;
  cacheHits: number;
}

export const toNano = (usd: number): number => Math.round(usd * 1e9);

/** A row's contribution to usage. */
export function rowCounters(row: RequestRow): UsageCounters {
  return { requests: 1, costNano: toNano(row.cost_usd), tokensIn: row.tokens_in, tokensOut: row.tokens_out, cacheHits: row.cache_tier === null ? 0 : 1 };
}

export type Bucket = 'hour' | 'day' | 'week';

/** 1970-01-01 was a Thursday: weeks start on Monday, UTC */
const MONDAY_OFFSET_MS = 3 * DAY_MS;

/** the start of the UTC bucket holding `ms` */
export function bucketStart(ms: number, bucket: Bucket): number {
  switch (bucket) {
    case 'hour':
      return ms - (ms % HOUR_MS);
    case 'day':
      return ms - (ms % DAY_MS);
    case 'week':
      return ms - ((ms + MONDAY_OFFSET_MS) % (7 * DAY_MS));
  }
}

export interface UsageQuery {
  groupBy: Dimension[];
  bucket: Bucket | undefined;
  /** exact-match drill-down filters by dimension */
  filters: Partial<Record<Dimension, string>>;
}

export interface UsageRow {
  [column: string]: string | number | null;
}

/** a rollup cell's counters: requests, cost_nano, tokens_in, tokens_out, cache_hits */
export type Counts = [number, number, number, number, number];

/** One group of the answer: its dimension values and bucket, and its counters. */
interface Group {
  values: ReadonlyArray<string | null>;
  bucket: number | undefined;
  c: Counts;
}

/** The groups of one combination of grouped values, by bucket start (NO_BUCKET without buckets). */
interface Slot {
  values: ReadonlyArray<string | null>;
  groups: Map<number, Group>;
}

const NO_BUCKET = -1;

/**
 * Sums rollup cells into usage rows grouped by the requested dimensions and
 * bucket. A cell's tuple holds the values of `layout` (every dimension, or
 * those of a projection). A tuple recurs in every period of the window, so
 * what it means for the answer (filtered out, or which group) is worked out
 * once per tuple.
 */
export class UsageAggregator {
  /** by the grouped values, joined */
  private readonly slots = new Map<string, Slot>();
  /** by dimension tuple; null: a filter leaves it out */
  private readonly placed = new Map<string, Slot | null>();
  private readonly filterAt: Array<[number, string]>;
  private readonly groupAt: number[];

  constructor(
    private readonly query: UsageQuery,
    layout: readonly Dimension[] = DIMENSION_NAMES,
  ) {
    this.filterAt = Object.entries(query.filters).map(([d, v]) => [layout.indexOf(d as Dimension), v]);
    this.groupAt = query.groupBy.map((d) => layout.indexOf(d));
  }

  /** one rollup cell: a dimension tuple, the start of its period (ms) and its value "requests cost_nano tokens_in tokens_out cache_hits" */
  add(tuple: string, atMs: number, value: string): void {
    const g = this.groupOf(tuple, atMs);
    if (g) addCounters(g.c, value);
  }

  /** one rollup cell with its counters parsed */
  addCounts(tuple: string, atMs: number, c: Counts): void {
    const g = this.groupOf(tuple, atMs);
    if (g) for (let i = 0; i < c.length; i++) g.c[i] = (g.c[i] as number) + (c[i] as number);
  }

  /** the group a cell adds to, undefined when a filter leaves it out */
  private groupOf(tuple: string, atMs: number): Group | undefined {
    let slot = this.placed.get(tuple);
    if (slot === undefined) {
      slot = this.place(tuple);
      this.placed.set(tuple, slot);
    }
    if (slot === null) return undefined;
    const bucket = this.query.bucket === undefined ? NO_BUCKET : bucketStart(atMs, this.query.bucket);
    let g = slot.groups.get(bucket);
    if (!g) slot.groups.set(bucket, (g = { values: slot.values, bucket: bucket === NO_BUCKET ? undefined : bucket, c: [0, 0, 0, 0, 0] }));
    return g;
  }

  private place(tuple: string): Slot | null {
    const values = tuple.split(TUPLE_SEP);
    for (const [i, v] of this.filterAt) if (values[i] !== v) return null;
    const picked = this.groupAt.map((i) => (values[i] === '' ? null : (values[i] as string)));
    const id = picked.join(TUPLE_SEP);
    let slot = this.slots.get(id);
    if (!slot) this.slots.set(id, (slot = { values: picked, groups: new Map() }));
    return slot;
  }

  /** adds the groups of another aggregator of the same query (of cells of another layout) */
  merge(other: UsageAggregator): void {
    for (const [id, from] of other.slots) {
      let slot = this.slots.get(id);
      if (!slot) this.slots.set(id, (slot = { values: from.values, groups: new Map() }));
      for (const [bucket, g] of from.groups) {
        const mine = slot.groups.get(bucket);
        if (mine) for (let i = 0; i < g.c.length; i++) mine.c[i] = (mine.c[i] as number) + (g.c[i] as number);
        else slot.groups.set(bucket, { ...g, c: [...g.c] });
      }
    }
  }

  /** by bucket (oldest first), then by cost (highest first) */
  rows(limit: number): UsageRow[] {
    const groups = [...this.slots.values()].flatMap((s) => [...s.groups.values()]);
    const sorted = groups.sort((a, b) => (a.bucket ?? 0) - (b.bucket ?? 0) || b.c[1] - a.c[1]);
    return sorted.slice(0, limit).map((g) => {
      const row: UsageRow = {};
      if (g.bucket !== undefined) row['bucket_start'] = new Date(g.bucket).toISOString();
      this.query.groupBy.forEach((d, i) => (row[d] = g.values[i] ?? null));
      row['requests'] = g.c[0];
      row['cost_usd'] = g.c[1] / 1e9;
      row['tokens_in'] = g.c[2];
      row['tokens_out'] = g.c[3];
      row['cache_hits'] = g.c[4];
      return row;
    });
  }
}

/** adds a cell's value "requests cost_nano tokens_in tokens_out cache_hits" to `c`, without splitting it */
function addCounters(c: Counts, value: string): void {
  let from = 0;
  for (let i = 0; i < c.length; i++) {
    const space = value.indexOf(' ', from);
    const end = space === -1 ? value.length : space;
    c[i] = (c[i] as number) + Number(value.slice(from, end));
    from = end + 1;
  }
}
