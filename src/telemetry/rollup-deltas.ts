import { forEachProjectionCell } from './projections.js';
import { type Counts, TUPLE_SEP } from './usage.js';

export type Cells = Map<string, Counts>;

const addInto = (to: Counts, c: Counts): void => {
  for (let i = 0; i < c.length; i++) to[i] = (to[i] as number) + (c[i] as number);
};

/**
 * The usage of the rows of one append, summed in the writer so Redis adds
 * each rollup cell once per append, not once per row: by rollup tuple (every
 * dimension), and by projection. A projection's cells are worked out once per
 * distinct tuple, so rows that share their dimension values cost one map
 * update each.
 */
export class RollupDeltas {
  /** by rollup tuple */
  readonly tuples: Cells = new Map();

  add(tuple: string, c: Counts): void {
    const had = this.tuples.get(tuple);
    if (had) addInto(had, c);
    else this.tuples.set(tuple, [...c]);
  }

  /** the projections' cells, by projection name (projections.ts) */
  projections(): Map<string, Cells> {
    const out = new Map<string, Cells>();
    for (const [tuple, c] of this.tuples) {
      forEachProjectionCell(tuple.split(TUPLE_SEP), (name, field) => {
        let cells = out.get(name);
        if (!cells) out.set(name, (cells = new Map()));
        const had = cells.get(field);
        if (had) addInto(had, c);
        else cells.set(field, [...c]);
      });
    }
    return out;
  }
}
