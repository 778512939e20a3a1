/**
 * The rows a scorecard is computed from. A row is one finished request with
 * the columns of the durable request row the scorecard reads (same names),
 * plus each skill's report detail and the reply's tool-call fidelity. It
 * becomes samples (samples.ts) as it is recorded (the durable store) or as it
 * is read (the process window, sources.ts).
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
   * `ledger_usd` (agent_trajectory_compaction: one fold's net dollars, trued
   * up from the reply's cache usage when `ledger_trued_up`).
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

/** Where every finished request's row goes, for the scorecards to read. */
export interface ScorecardRowSink {
  record(row: ScorecardRow): void;
}
