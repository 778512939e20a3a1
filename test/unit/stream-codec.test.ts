import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DecisionRecord, RequestRow } from '../../src/telemetry/row.js';
import { decodeEntry, encodeEntry } from '../../src/telemetry/stream-codec.js';

test('a stream entry gives back the row and, when asked, the decision record it was written with', () => {
  const row = { request_id: 'req_1', ts: '2030-01-01T00:00:00.000Z', tenant_id: 'acme', status: 200, cost_usd: 0.25 } as unknown as RequestRow;
  const decision = { route: { model: 'gpt-4o' } } as unknown as DecisionRecord;
  const fields = encodeEntry(row, decision);
  const both = decodeEntry(fields, true);
  assert.deepEqual([both?.row.request_id, both?.row.status, both?.row.cost_usd, both?.row.model], ['req_1', 200, 0.25, null]);
  assert.deepEqual(both?.decision, decision);
  assert.equal(decodeEntry(fields, false)?.decision, undefined);
});

test('an entry written one field per column (an older build) is no row: reads skip it instead of listing nulls', () => {
  assert.equal(decodeEntry(['request_id', 'req_old', 'ts', '2030-01-01T00:00:00.000Z', 'status', '200'], true), undefined);
});
