import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import { GatewayError } from '../../src/errors.js';
import { compileSchema } from '../../src/http/validate.js';

const parse = compileSchema(
  Type.Object(
    {
      key_id: Type.String(),
      reason: Type.Optional(Type.String()),
      params: Type.Optional(Type.Object({ fold: Type.Optional(Type.Object({ min_tokens: Type.Integer({ minimum: 1 }) }, { additionalProperties: false })) }, { additionalProperties: false })),
    },
    { additionalProperties: false },
  ),
);

/** the field and message of the 400 a parser throws */
function refusal(parser: (value: unknown, what?: string) => unknown, value: unknown, what?: string): { field: unknown; message: string } {
  try {
    parser(value, what);
  } catch (err) {
    assert.ok(err instanceof GatewayError);
    assert.equal(err.type, 'request_error');
    return { field: err.options.fields?.['field'], message: err.message };
  }
  assert.fail('expected a refusal');
}

describe('compileSchema', () => {
  it('names a field as the caller wrote it: a dotted path from the body, a missing one by its name', () => {
    assert.deepEqual(refusal(parse, { key_id: 'k', reason: 5 }), { field: 'reason', message: 'reason: must be string' });
    assert.deepEqual(refusal(parse, { key_id: 'k', params: { fold: { min_tokens: 0 } } }), { field: 'params.fold.min_tokens', message: 'params.fold.min_tokens: must be >= 1' });
    assert.deepEqual(refusal(parse, {}), { field: 'key_id', message: 'key_id: required' });
    assert.deepEqual(refusal(parse, 5), { field: 'body', message: 'body: must be object' });
  });

  it('names an unknown field itself, wherever it is', () => {
    assert.deepEqual(refusal(parse, { key_id: 'k', extra: 1 }), { field: 'extra', message: 'extra: unknown field' });
    assert.deepEqual(refusal(parse, { key_id: 'k', params: { fold: { min_tokens: 2, bogus: true } } }), { field: 'params.fold.bogus', message: 'params.fold.bogus: unknown field' });
  });

  it('puts a value that is itself a field, or a file, under its name', () => {
    assert.equal(refusal(parse, { key_id: 'k', reason: 5 }, 'GW_BOOTSTRAP').field, 'GW_BOOTSTRAP.reason');
    assert.equal(refusal(parse, { key_id: 'k', extra: 1 }, 'skill_params').field, 'skill_params.extra');
  });

  it('returns a valid value as it is', () => {
    const value = { key_id: 'k', params: { fold: { min_tokens: 3 } } };
    assert.equal(parse(value), value);
  });
});

describe('compileSchema on a union of literals', () => {
  const parseOutcome = compileSchema(
    Type.Object({
      outcome: Type.Union([Type.Literal('success'), Type.Literal('failure')]),
      color: Type.Optional(Type.Union([Type.Literal('red')])),
      limit: Type.Optional(Type.Union([Type.Literal('none'), Type.Number()])),
    }),
  );
  const message = (value: unknown) => refusal(parseOutcome, value).message;

  it('says which values it takes, where Ajv says "must be equal to constant"', () => {
    assert.equal(message({ outcome: 'great' }), 'outcome: must be "success" or "failure"');
    assert.equal(message({ outcome: 'success', color: 'blue' }), 'color: must be "red"');
    assert.equal(message({ outcome: 3 }), 'outcome: must be "success" or "failure"');
    assert.equal(message({ outcome: 'success', limit: true }), 'limit: must be "none" or number');
  });
});
