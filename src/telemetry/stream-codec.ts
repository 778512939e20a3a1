import type { DecisionRecord, RequestRow } from './row.js';

type Kind = 'str' | 'str?' | 'num' | 'num?' | 'bool' | 'bool?' | 'json';

/**
 * How each column of a row is kept in its stream entry: one field per column
 * with the same field names in every entry, which Redis stores once per node
 * of the stream, so an entry costs little more than its values.
 */
const COLUMNS: ReadonlyArray<readonly [keyof RequestRow, Kind]> = [
  ['request_id', 'str'],
  ['ts', 'str'],
  ['tenant_id', 'str'],
  ['key_id', 'str'],
  ['session_id', 'str?'],
  ['task_id', 'str?'],
  ['team', 'str?'],
  ['use_case', 'str?'],
  ['desk', 'str?'],
  ['pm', 'str?'],
  ['strategy', 'str?'],
  ['cost_centre', 'str?'],
  ['project', 'str?'],
  ['model', 'str?'],
  ['provider', 'str'],
  ['surface', 'str'],
  ['channel', 'str'],
  ['tier', 'str'],
  ['relay_reason', 'str?'],
  ['optimization_state', 'str'],
  ['status', 'num'],
  ['cache_tier', 'str?'],
  ['destination_id', 'str?'],
  ['model_serving_route', 'str'],
  ['egress_mode', 'str?'],
  ['error_detail', 'str?'],
  ['tokens_in', 'num'],
  ['tokens_out', 'num'],
  ['tokens_saved', 'num'],
  ['cost_usd', 'num'],
  ['latency_ms', 'num'],
  ['overhead_ms', 'num?'],
  ['retry', 'bool'],
  ['usage_estimated', 'bool'],
  ['tool_fidelity', 'bool?'],
  ['skills', 'json'],
];
const DECISION_FIELD = 'decision';

const encode = (v: unknown, kind: Kind): string => {
  if (v === null) return '';
  if (kind === 'bool' || kind === 'bool?') return v ? '1' : '0';
  if (kind === 'json') return JSON.stringify(v);
  return String(v);
};

const decode = (v: string, kind: Kind): unknown => {
  switch (kind) {
    case 'str':
      return v;
    case 'str?':
      return v === '' ? null : v;
    case 'num':
      return Number(v);
    case 'num?':
      return v === '' ? null : Number(v);
    case 'bool':
      return v === '1';
    case 'bool?':
      return v === '' ? null : v === '1';
    case 'json':
      return JSON.parse(v) as unknown;
  }
};

/** The stream entry's fields and values, flat, as XADD takes them. */
export function encodeEntry(row: RequestRow, decision: DecisionRecord): string[] {
  const out: string[] = [];
  for (const [name, kind] of COLUMNS) out.push(name, encode(row[name], kind));
  out.push(DECISION_FIELD, JSON.stringify(decision));
  return out;
}

const KIND = new Map<string, Kind>(COLUMNS.map(([n, k]) => [n, k]));

/** A stream entry's row, and its decision record when asked. */
export function decodeEntry(fields: readonly string[], withDecision: boolean): { row: RequestRow; decision: DecisionRecord | undefined } {
  const row: Record<string, unknown> = {};
  let decision: DecisionRecord | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = fields[i] as string;
    const value = fields[i + 1] as string;
    if (name === DECISION_FIELD) {
      if (withDecision) decision = JSON.parse(value) as DecisionRecord;
      continue;
    }
    const kind = KIND.get(name);
    if (kind) row[name] = decode(value, kind);
  }
  return { row: row as unknown as RequestRow, decision };
}

/** The value a column has in a stream entry, for exact-match filters without decoding the whole row. */
export function fieldValue(fields: readonly string[], name: string): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}
