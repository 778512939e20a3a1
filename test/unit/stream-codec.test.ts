import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DecisionRecord, RequestRow } from '../../src/telemetry/row.js';
import { decodeEntry, encodeEntry } from '../../src/telemetry/stream-codec.js';
import { DECISION } from '../helpers/usage-rows.js';

const ROW = { request_id: 'req_1', ts: '2030-01-01T00:00:00.000Z', tenant_id: 'acme', status: 200, cost_usd: 0.25 } as unknown as RequestRow;

/** a record with every optional part present and absent somewhere */
const FULL: DecisionRecord = {
  served_by: 'pipeline',
  stages: [
    { stage: 'auth', ms: 0.02 },
    { stage: 'upstream_openai', ms: 12.5, running: true },
  ],
  route: { provider: 'openai', model: null, routed_model: 'gpt-4o-mini', reason: 'short prompt' },
  skills: [
    { skill: 'guardrails', mode: 'prod', arm: 'prod', outcome: 'miss', ms: 0.2 },
    { skill: 'prompt_compaction', mode: 'canary', arm: 'treatment', outcome: 'applied', ms: 1.5, detail: '{"tokens_saved":40}', tokens_saved: 40 },
    { skill: 'pii_redaction', mode: 'shadow', arm: 'shadow', outcome: 'shadow', ms: 0.7, detail: '{"detected":[]}' },
  ],
  cache: { result: 'miss', similarity: 0.91 },
  budget: { reserved_usd: 0.05, settled_usd: 0.00012 },
  rate_limit: { remaining: 0 },
  fail_open: { reason: 'guardrails: ceiling_exceeded' },
  refusal: { stage: 'policy_access', type: 'model_not_allowed' },
  dispatch: { served: 'key-b', steps: [{ destination: 'key-a', outcome: 'rate_limited' }, { destination: 'key-b', outcome: 'served' }] },
};

test('a stream entry gives back the row and, when asked, the decision record it was written with', () => {
  for (const decision of [FULL, DECISION]) {
    const fields = encodeEntry(ROW, decision);
    const both = decodeEntry(fields, true);
    assert.deepEqual([both?.row.request_id, both?.row.status, both?.row.cost_usd, both?.row.model], ['req_1', 200, 0.25, null]);
    assert.deepEqual(both?.decision, decision);
    assert.equal(decodeEntry(fields, false)?.decision, undefined);
  }
});

test('the decision record is kept without its field names (less to send and to keep per row)', () => {
  const [, , , packed] = encodeEntry(ROW, FULL);
  assert.ok(packed.length < 0.6 * JSON.stringify(FULL).length, `${packed.length} bytes against ${JSON.stringify(FULL).length}`);
});

test('a decision record an earlier build wrote as an object still reads', () => {
  const [rowField, values] = encodeEntry(ROW, FULL);
  assert.deepEqual(decodeEntry([rowField, values, 'decision', JSON.stringify(FULL)], true)?.decision, FULL);
});

test('an entry written one field per column (an older build) is no row: reads skip it instead of listing nulls', () => {
  assert.equal(decodeEntry(['request_id', 'req_old', 'ts', '2030-01-01T00:00:00.000Z', 'status', '200'], true), undefined);
});
