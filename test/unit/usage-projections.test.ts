import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { projectedCells, projectionFor, projectionsRead } from '../../src/telemetry/projections.js';
import { ProjectionSums } from '../../src/telemetry/projection-sums.js';
import { type Bucket, type Counts, type Dimension, DIMENSION_NAMES, TUPLE_SEP, UsageAggregator, type UsageQuery, type UsageRow } from '../../src/telemetry/usage.js';

const HOUR = 3_600_000;
const T0 = Date.parse('2026-03-02T00:00:00Z');

/** a reproducible draw in [0, n) */
function draws(seed: number): (n: number) => number {
  let s = seed;
  return (n) => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return (s >>> 8) % n;
  };
}

/** rollup tuples of random cells: each dimension unset ('') about a third of the time, a few values otherwise */
function randomCells(seed: number, count: number): Array<{ tuple: string; atMs: number; c: Counts }> {
  const draw = draws(seed);
  return Array.from({ length: count }, () => ({
    tuple: DIMENSION_NAMES.map((d) => (draw(3) === 0 ? '' : `${d}-${draw(3)}`)).join(TUPLE_SEP),
    atMs: T0 + draw(60) * HOUR,
    c: [1 + draw(3), draw(5_000_000), draw(900), draw(300), draw(2)] as Counts,
  }));
}

const canonical = (rows: UsageRow[]): string[] => rows.map((r) => JSON.stringify(r)).sort();

type Cell = ReturnType<typeof randomCells>[number];
type Projections = ProjectionSums['byName'];

/** each hour's projections, summed the way the store holds them */
function hourProjections(cells: Cell[]): Map<number, Projections> {
  const hours = new Map<number, ProjectionSums>();
  for (const { tuple, atMs, c } of cells) {
    if (!hours.has(atMs)) hours.set(atMs, new ProjectionSums());
    hours.get(atMs)?.add(tuple, c);
  }
  return new Map([...hours].map(([atMs, sums]) => [atMs, sums.byName]));
}

/** the query's answer from every combination, and from the projections of each hour */
function both(cells: Cell[], hours: Map<number, Projections>, query: UsageQuery): { full: UsageRow[]; projected: UsageRow[] } {
  const full = new UsageAggregator(query);
  for (const { tuple, atMs, c } of cells) full.add(tuple, atMs, c.join(' '));
  const dims = projectionFor(query);
  assert.ok(dims, 'a projection answers the query');
  const projected = new UsageAggregator(query, dims);
  for (const [atMs, projections] of hours) {
    const hashes = projectionsRead(dims).map((name) => projections.get(name) ?? new Map<string, Counts>());
    for (const [tuple, c] of projectedCells(dims, hashes)) projected.addCounts(tuple, atMs, c);
  }
  return { full: full.rows(100_000), projected: projected.rows(100_000) };
}

describe('usage from projections is exactly usage from every combination', () => {
  const cells = randomCells(7, 2000);
  const hours = hourProjections(cells);

  it('grouped by any one or two dimensions, with or without a bucket, rows without a value included', () => {
    const buckets: Array<Bucket | undefined> = [undefined, 'hour', 'day', 'week'];
    let withNull = 0;
    DIMENSION_NAMES.forEach((a, i) => {
      const groupings: Dimension[][] = [[a], ...DIMENSION_NAMES.slice(i + 1).map((b) => [b, a])];
      groupings.forEach((groupBy, j) => {
        const query = { groupBy, bucket: buckets[(i + j) % buckets.length], filters: {} };
        const { full, projected } = both(cells, hours, query);
        assert.ok(full.length > 1, groupBy.join(','));
        assert.deepEqual(canonical(projected), canonical(full), `group_by=${groupBy.join(',')} bucket=${query.bucket}`);
        withNull += full.filter((r) => groupBy.some((d) => r[d] === null)).length;
      });
    });
    assert.ok(withNull > 0, 'groups without a value were derived');
  });

  it('with a drill-down filter on the grouped dimension, another one, or only filters', () => {
    const queries: UsageQuery[] = [
      { groupBy: ['model'], bucket: undefined, filters: { team: 'team-1' } },
      { groupBy: ['model'], bucket: 'day', filters: { model: 'model-2' } },
      { groupBy: ['key', 'project'], bucket: undefined, filters: { key: 'key-0' } },
      { groupBy: ['provider'], bucket: 'hour', filters: { provider: 'provider-1' } },
      { groupBy: ['status'], bucket: undefined, filters: { desk: '' } },
      { groupBy: [], bucket: 'day', filters: { team: 'team-2', feature: 'feature-0' } },
      { groupBy: [], bucket: undefined, filters: {} },
    ];
    for (const query of queries) {
      const { full, projected } = both(cells, hours, query);
      assert.ok(full.length > 0, JSON.stringify(query));
      assert.deepEqual(canonical(projected), canonical(full), JSON.stringify(query));
    }
  });

  it('a query naming three dimensions has no projection: it is answered from every combination', () => {
    assert.equal(projectionFor({ groupBy: ['model', 'team'], bucket: undefined, filters: { key: 'k' } }), undefined);
    assert.deepEqual(projectionFor({ groupBy: ['team', 'model'], bucket: undefined, filters: { team: 'x' } }), ['model', 'team']);
  });
});
