/**
 * Destinations that failed recently and are tried only after the healthy
 * ones until their cool-down ends (merit-order dispatch). Kept per org; ids
 * are the org's destination ids.
 */
export interface CoolDowns {
  /** which of `ids` are cooling down now: answers at once from memory, or within a short bound from the shared store */
  cooling(org: string, ids: readonly string[]): ReadonlySet<string> | Promise<ReadonlySet<string>>;
  /** `id` failed: it cools down for `ms`; never waits */
  coolDown(org: string, id: string, ms: number): void;
  start(): Promise<void>;
  close(): void;
}

/** Past this many entries, a new cool-down first drops the ended ones. */
const PRUNE_AT = 10_000;

/** Cool-downs in this process: the whole state without Redis, and each replica's own view beside it. */
export class LocalCoolDowns implements CoolDowns {
  /** when each org's destination's cool-down ends (clock ms) */
  private readonly until = new Map<string, number>();

  constructor(private readonly clock: () => number = Date.now) {}

  cooling(org: string, ids: readonly string[]): ReadonlySet<string> {
    const now = this.clock();
    const out = new Set<string>();
    for (const id of ids) {
      const key = `${org}:${id}`;
      const end = this.until.get(key);
      if (end === undefined) continue;
      if (end > now) out.add(id);
      else this.until.delete(key);
    }
    return out;
  }

  coolDown(org: string, id: string, ms: number): void {
    const now = this.clock();
    if (this.until.size >= PRUNE_AT) for (const [key, end] of this.until) if (end <= now) this.until.delete(key);
    this.until.set(`${org}:${id}`, now + ms);
  }

  async start(): Promise<void> {}

  close(): void {}
}
