import type { DecisionRecord, RequestRow } from './row.js';

/**
 * The columns of a row in the order its stream entry keeps them. A new
 * column goes at the end: an entry written before it existed reads it as null.
 */
const COLUMNS: ReadonlyArray<keyof RequestRow> = [
  'request_id',
  'ts',
  'tenant_id',
  'key_id',
  'session_id',
  'task_id',
  'team',
  'use_case',
  'desk',
  'pm',
  'strategy',
  'cost_centre',
  'project',
  'model',
  'provider',
  'surface',
  'channel',
  'tier',
  'relay_reason',
  'optimization_state',
  'status',
  'cache_tier',
  'destination_id',
  'model_serving_route',
  'egress_mode',
  'error_detail',
  'tokens_in',
  'tokens_out',
  'tokens_saved',
  'cost_usd',
  'latency_ms',
  'overhead_ms',
  'retry',
  'usage_estimated',
  'tool_fidelity',
  'skills',
  'error_type',
];
const ROW_FIELD = 'row';
const DECISION_FIELD = 'decision';

/**
 * The stream entry of a row: two fields, the row's values as one JSON array
 * in column order and the decision record as JSON. Every entry has the same
 * two field names, which Redis stores once per node of the stream, and the
 * append sends two values per row, not one per column.
 */
export function encodeEntry(row: RequestRow, decision: DecisionRecord): [string, string, string, string] {
  const values: unknown[] = new Array(COLUMNS.length);
  for (let i = 0; i < COLUMNS.length; i++) values[i] = row[COLUMNS[i] as keyof RequestRow];
  return [ROW_FIELD, JSON.stringify(values), DECISION_FIELD, JSON.stringify(decision)];
}

/**
 * A stream entry's row, and its decision record when asked; undefined for an
 * entry without a row field (one written by a build that kept a field per
 * column), which every read skips.
 */
export function decodeEntry(fields: readonly string[], withDecision: boolean): { row: RequestRow; decision: DecisionRecord | undefined } | undefined {
  let values: unknown[] | undefined;
  let decision: DecisionRecord | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === ROW_FIELD) values = JSON.parse(fields[i + 1] as string) as unknown[];
    else if (withDecision && fields[i] === DECISION_FIELD) decision = JSON.parse(fields[i + 1] as string) as DecisionRecord;
  }
  if (values === undefined) return undefined;
  const row: Record<string, unknown> = {};
  for (let i = 0; i < COLUMNS.length; i++) row[COLUMNS[i] as string] = values[i] ?? null;
  return { row: row as unknown as RequestRow, decision };
}
