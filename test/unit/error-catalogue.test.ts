import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readBlock } from '../../scripts/doc-blocks.js';
import { ENVELOPES_BLOCK, envelopeExamples, ERRORS_DOC, errorTable, RAISED_WHEN, TABLE_BLOCK } from '../../scripts/error-catalogue.js';
import { ERROR_TABLE } from '../../src/errors.js';

test("docs/errors.md's type table is the one src/errors.ts prints (regenerate: node --import tsx scripts/error-catalogue.ts --write)", () => {
  assert.equal(readBlock(ERRORS_DOC, TABLE_BLOCK), errorTable());
});

test("docs/errors.md's envelope examples are what the surfaces render now", () => {
  assert.equal(readBlock(ERRORS_DOC, ENVELOPES_BLOCK), envelopeExamples());
});

test('every error type says when it is raised, and no explanation names a type that is gone', () => {
  assert.deepEqual(Object.keys(RAISED_WHEN).sort(), Object.keys(ERROR_TABLE).sort());
});
