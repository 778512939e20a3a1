/**
 * The rows a scorecard is computed from, and where they come from. A row is
 * one finished request with the columns of the durable request row the
 * scorecard reads (same names), plus each skill's report detail and the
 * reply's tool-call fidelity.
 */
import type { RequestRow } from '../telemetry/row.js';

/** One skill's part in a request: its arm, its outcome and what it reported. */
export interface RowSkill {
  /** treatment, control or shadow; a skill that was off or rolled_back has no entry */
  arm: string;
  outcome: string;
  /**
   * What the skill reported (its trace detail). Read where present:
   * `tokens_saved`, `usd_saved` (numbers); `kinds` (pii_redaction: kind → count);
   * `decision` (a shadow stage's would-be outcome, e.g. `hit`); `false_hit`
   * (semantic_cache in shadow: the live reply differed from the stored one);
   * `ledger_usd` (agent_trajectory_compaction: one fold's net dollars).
   */
  detail?: Readonly<Record<string, unknown>>;
}

/** The durable row's columns the scorecard reads (same names and types), with each skill's report. */
export type ScorecardRow = Pick<
  RequestRow,
  | 'request_id'
  | 'ts'
  | 'tenant_id'
  | 'key_id'
  | 'session_id'
  | 'task_id'
  | 'status'
  | 'latency_ms'
  | 'overhead_ms'
  | 'cost_usd'
  | 'tokens_in'
  | 'tokens_out'
  | 'tokens_saved'
  | 'retry'
  | 'relay_reason'
  | 'error_detail'
  | 'tool_fidelity'
> & { skills: Readonly<Record<string, RowSkill>> };

export interface RowQuery {
  /** rows at or after this time (ms since the epoch) */
  sinceMs: number;
  /** only this key's rows */
  keyId?: string;
  /** only rows in which this skill ran (had an arm) */
  skill: string;
}

export type StoreKind = 'durable' | 'process';

/** Where a scorecard's rows come from; `kind` is what `source.store` says. */
export interface RowSource {
  readonly kind: StoreKind;
  rows(tenant: string, q: RowQuery): Promise<Iterable<ScorecardRow>>;
}

/** rows use one ISO 8601 form (UTC, milliseconds), so times compare as strings without parsing each row */
const matches = (row: ScorecardRow, tenant: string, q: RowQuery, sinceIso: string): boolean =>
  row.tenant_id === tenant && (q.keyId === undefined || row.key_id === q.keyId) && row.skills[q.skill] !== undefined && row.ts >= sinceIso;

/**
 * The answering process's own recent rows, for a gateway without a durable
 * store: a ring of the last `capacity` rows of every tenant, fed by record()
 * with every finished request (the telemetry row sink, main.ts).
 * It holds only what this process served and forgets on restart.
 */
export class ProcessRowWindow implements RowSource {
  readonly kind = 'process';
  private readonly ring: Array<ScorecardRow | undefined>;
  private next = 0;

  constructor(readonly capacity: number) {
    this.ring = new Array<ScorecardRow | undefined>(capacity);
  }

  record(row: ScorecardRow): void {
    this.ring[this.next] = row;
    this.next = (this.next + 1) % this.capacity;
  }

  async rows(tenant: string, q: RowQuery): Promise<ScorecardRow[]> {
    const out: ScorecardRow[] = [];
    const since = new Date(q.sinceMs).toISOString();
    for (const row of this.ring) if (row !== undefined && matches(row, tenant, q, since)) out.push(row);
    return out;
  }
}

/** Reads a tenant's durable rows of a time range (the telemetry stream reader, connected in main.ts). */
export type DurableRowReader = (tenant: string, sinceMs: number) => Promise<Iterable<DurableRowLike>>;

/** A durable row as the telemetry store keeps it: the scorecard's columns, where the store has them. */
export type DurableRowLike = Omit<ScorecardRow, 'tool_fidelity' | 'skills' | 'relay_reason' | 'tokens_saved'> & {
  tool_fidelity?: boolean | null;
  relay_reason?: string | null;
  tokens_saved?: number;
  skills: Readonly<Record<string, { arm: string; outcome: string; detail?: Readonly<Record<string, unknown>> }>>;
};

/**
 * The fleet's rows from the durable telemetry store: every replica reads the
 * same rows, so every replica answers the same scorecard. A thin adapter over
 * the store's reader: it narrows to the key and skill and fills the columns a
 * store may not carry.
 */
export class DurableRowSource implements RowSource {
  readonly kind = 'durable';

  constructor(private readonly read: DurableRowReader) {}

  async rows(tenant: string, q: RowQuery): Promise<ScorecardRow[]> {
    const out: ScorecardRow[] = [];
    const since = new Date(q.sinceMs).toISOString();
    for (const r of await this.read(tenant, q.sinceMs)) {
      const row: ScorecardRow = { ...r, tool_fidelity: r.tool_fidelity ?? null, relay_reason: r.relay_reason ?? null, tokens_saved: r.tokens_saved ?? 0 };
      if (matches(row, tenant, q, since)) out.push(row);
    }
    return out;
  }
}
