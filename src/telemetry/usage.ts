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

const SEP = '\x1f';

/** A row's values of every dimension, in DIMENSION_NAMES order, as one rollup field ('' for none). */
export function dimensionTuple(row: RequestRow): string {
  let out = '';
  for (let i = 0; i < DIMENSION_NAMES.length; i++) {
    const v = row[USAGE_DIMENSIONS[DIMENSION_NAMES[i] as Dimension]];
    out += (i === 0 ? '' : SEP) + (v === null ? '' : String(v));
  }
  return out;
}

export const splitTuple = (tuple: string): string[] => tuple.split(SEP);

/** The counters of one rollup cell (costs in nano-dollars, so sums stay exact integers). */
export interface UsageCounters {
  requests: number;
  costNano: number;
  tokensIn: number;
  tokensOut: number;
  cacheHits: number;
}

/** A rollup cell's value: "requests cost_nano tokens_in tokens_out cache_hits". */
export function parseCounters(value: string): UsageCounters {
  const [r = 0, c = 0, i = 0, o = 0, h = 0] = value.split(' ').map(Number);
  return { requests: r, costNano: c, tokensIn: i, tokensOut: o, cacheHits: h };
}

export const toNano = (usd: number): number => Math.round(usd * 1e9);

/** A row's contribution to usage. */
export function rowCounters(row: RequestRow): UsageCounters {
  return { requests: 1, costNano: toNano(row.cost_usd), tokensIn: row.tokens_in, tokensOut: row.tokens_out, cacheHits: row.cache_tier === null ? 0 : 1 };
}

export type Bucket = 'hour' | 'day' | 'week';

const DAY_MS = 86_400_000;
/** 1970-01-01 was a Thursday: weeks start on Monday, UTC */
const MONDAY_OFFSET_MS = 3 * DAY_MS;

/** the start of the UTC bucket holding `ms` */
export function bucketStart(ms: number, bucket: Bucket): number {
  switch (bucket) {
    case 'hour':
      return ms - (ms % 3_600_000);
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

/** Sums rollup cells (or single rows) into usage rows grouped by the requested dimensions and bucket. */
export class UsageAggregator {
  private readonly groups = new Map<string, { values: Array<string | null>; bucket: number | undefined; c: UsageCounters }>();
  private readonly filterAt: Array<[number, string]>;
  private readonly groupAt: number[];

  constructor(private readonly query: UsageQuery) {
    this.filterAt = Object.entries(query.filters).map(([d, v]) => [DIMENSION_NAMES.indexOf(d as Dimension), v]);
    this.groupAt = query.groupBy.map((d) => DIMENSION_NAMES.indexOf(d));
  }

  /** one cell: the dimension values of a tuple at a time (ms) */
  add(values: readonly string[], atMs: number, c: UsageCounters): void {
    for (const [i, v] of this.filterAt) if (values[i] !== v) return;
    const bucket = this.query.bucket === undefined ? undefined : bucketStart(atMs, this.query.bucket);
    const picked = this.groupAt.map((i) => (values[i] === '' ? null : (values[i] as string)));
    const id = `${bucket ?? ''}${SEP}${picked.join(SEP)}`;
    const g = this.groups.get(id);
    if (!g) {
      this.groups.set(id, { values: picked, bucket, c: { ...c } });
      return;
    }
    g.c.requests += c.requests;
    g.c.costNano += c.costNano;
    g.c.tokensIn += c.tokensIn;
    g.c.tokensOut += c.tokensOut;
    g.c.cacheHits += c.cacheHits;
  }

  /** by bucket (oldest first), then by cost (highest first) */
  rows(limit: number): UsageRow[] {
    const sorted = [...this.groups.values()].sort((a, b) => (a.bucket ?? 0) - (b.bucket ?? 0) || b.c.costNano - a.c.costNano);
    return sorted.slice(0, limit).map((g) => {
      const row: UsageRow = {};
      if (g.bucket !== undefined) row['bucket_start'] = new Date(g.bucket).toISOString();
      this.query.groupBy.forEach((d, i) => (row[d] = g.values[i] ?? null));
      row['requests'] = g.c.requests;
      row['cost_usd'] = g.c.costNano / 1e9;
      row['tokens_in'] = g.c.tokensIn;
      row['tokens_out'] = g.c.tokensOut;
      row['cache_hits'] = g.c.cacheHits;
      return row;
    });
  }
}
