import type { Static, TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { GatewayError } from '../errors.js';

const ajv = new Ajv({ allErrors: false, strict: false });
// ajv-formats ships CommonJS; its default export arrives wrapped under NodeNext
const addFormats = addFormatsModule as unknown as (a: Ajv) => Ajv;
addFormats(ajv);

/**
 * Compiles a TypeBox schema into a parser that throws a 400 request_error
 * naming the field as a dotted path from the body (`reason`,
 * `skill_params.agent_trajectory_compaction.min_fold_tokens`), under `what`
 * when the value is itself a field or a file; an unknown field is named itself.
 */
export function compileSchema<S extends TSchema>(schema: S): (value: unknown, what?: string) => Static<S> {
  const validate = ajv.compile<Static<S>>(schema);
  return (value, what) => {
    if (validate(value)) return value;
    const e = validate.errors?.[0];
    const unknown = e?.keyword === 'additionalProperties';
    const path = e === undefined ? [] : e.instancePath.split('/').slice(1);
    if (unknown) path.push(String(e.params['additionalProperty']));
    const field = [...(what === undefined ? [] : [what]), ...path].join('.') || 'body';
    const message = unknown ? 'is not a field this route takes' : (allowedValues(validate.errors ?? [], e) ?? e?.message ?? 'invalid');
    throw new GatewayError('request_error', `${field}: ${message}`, { fields: { field } });
  };
}

/**
 * "must be \"success\" or \"failure\"" where Ajv would say "must be equal to
 * constant": a union of literals fails each branch at the same place.
 */
function allowedValues(errors: readonly ErrorObject[], first: ErrorObject | undefined): string | undefined {
  if (first === undefined || (first.keyword !== 'const' && first.keyword !== 'enum')) return undefined;
  const values = errors
    .filter((e) => e.instancePath === first.instancePath && (e.keyword === 'const' || e.keyword === 'enum'))
    .flatMap((e) => (e.keyword === 'const' ? [e.params['allowedValue'] as unknown] : (e.params['allowedValues'] as unknown[])));
  return `must be ${values.map((v) => JSON.stringify(v)).join(' or ')}`;
}

/** Parses a JSON object body or throws a 400 request_error. */
export function parseJsonObject(body: Buffer): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new GatewayError('request_error', 'body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new GatewayError('request_error', 'body must be a JSON object');
  }
  return value as Record<string, unknown>;
}
