import { forEachProjectionCell } from './projections.js';
import { type Counts, TUPLE_SEP } from './usage.js';

export type Cells = Map<string, Counts>;

/** Sums rollup cells (by every dimension) into the cells of every projection (projections.ts). */
export class ProjectionSums {
  /** by projection name, then field */
  readonly byName = new Map<string, Cells>();

  add(tuple: string, c: Counts): void {
    forEachProjectionCell(tuple.split(TUPLE_SEP), (name, field) => {
      let cells = this.byName.get(name);
      if (!cells) this.byName.set(name, (cells = new Map()));
      const had = cells.get(field);
      if (had) for (let i = 0; i < c.length; i++) had[i] = (had[i] as number) + (c[i] as number);
      else cells.set(field, [...c]);
    });
  }
}
