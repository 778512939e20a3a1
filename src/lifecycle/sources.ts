import type { TransitionRecord } from '../tenancy/skills.js';
import type { ScorecardRow, ScorecardRowSink } from './rows.js';
import { isSample, SkillSamples } from './samples.js';

/** Where a scorecard's samples come from: the durable store (Redis) or the answering process's window. */

/** Which samples a read wants. */
export interface SampleQuery {
  skill: string;
  /** requests at or after this time (ms since the epoch) */
  sinceMs: number;
  /** the end of the window: the time of the read */
  nowMs: number;
  /** the name of the samples a key's requests go into, or undefined to leave the key out */
  group(keyId: string): string | undefined;
  /**
   * A key named here counts only requests served since this transition of the
   * skill: rows served under an earlier mode do not judge the current one.
   */
  since?: ReadonlyMap<string, Pick<TransitionRecord, 'id' | 'timestamp'>>;
}

export type StoreKind = 'durable' | 'process';

/** Where a scorecard's samples come from; `kind` is what `source.store` says. */
export interface SampleSource {
  readonly kind: StoreKind;
  /** one tenant's samples of a skill, by group */
  samples(tenant: string, q: SampleQuery): Promise<Map<string, SkillSamples>>;
}

/**
 * The answering process's own recent rows, for a gateway without a durable
 * store: a ring of the last `capacity` rows of every tenant, fed by record()
 * with every finished request (the telemetry row sink, main.ts), summed into
 * samples on each read. It holds only what this process served and forgets on
 * restart.
 */
export class ProcessRowWindow implements SampleSource, ScorecardRowSink {
  readonly kind = 'process';
  private readonly ring: Array<ScorecardRow | undefined>;
  private next = 0;

  /** `scored`: the skills scorecards read (the per-key skills), as the durable store is given them */
  constructor(
    readonly capacity: number,
    private readonly scored: ReadonlySet<string>,
  ) {
    this.ring = new Array<ScorecardRow | undefined>(capacity);
  }

  record(row: ScorecardRow): void {
    // a row that is no scorecard's sample takes its slot as before, but is not kept: with the guardrails' entry on
    // every request, the window held 50,000 rows (about 35 MB of heap) that no read could use, each promoted to the old space
    this.ring[this.next] = this.isSample(row) ? row : undefined;
    this.next = (this.next + 1) % this.capacity;
  }

  private isSample(row: ScorecardRow): boolean {
    for (const skill in row.skills) if (isSample(this.scored, skill, row.skills[skill]!)) return true;
    return false;
  }

  async samples(tenant: string, q: SampleQuery): Promise<Map<string, SkillSamples>> {
    const out = new Map<string, SkillSamples>();
    // rows use one ISO 8601 form (UTC, milliseconds), so times compare as strings without parsing each row
    const since = new Date(q.sinceMs).toISOString();
    for (const row of this.ring) {
      if (row === undefined || row.tenant_id !== tenant || row.skills[q.skill] === undefined || row.ts < since) continue;
      const group = q.group(row.key_id);
      if (group === undefined) continue;
      const transition = q.since?.get(row.key_id);
      if (transition !== undefined && row.ts < transition.timestamp) continue;
      let samples = out.get(group);
      if (samples === undefined) out.set(group, (samples = new SkillSamples()));
      samples.addRow(row, q.skill);
    }
    return out;
  }
}
