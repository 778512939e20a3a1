import type { Static, TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { GatewayError } from '../errors.js';

// verbose: an error carries its keyword's schema, so a union of literals can name them
const ajv = new Ajv({ allErrors: false, strict: false, verbose: true });
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
 * "must be one of success, failure" (as settings say it) where Ajv would say
 * "must be equal to constant" or "must be string": a union of literals fails
 * each of its branches at the same place, then the union itself. A single
 * literal: "must be red".
 */
function allowedValues(errors: readonly ErrorObject[], first: ErrorObject | undefined): string | undefined {
  const union = errors.find((e) => e.instancePath === first?.instancePath && (e.keyword === 'anyOf' || e.keyword === 'enum'));
  if (union === undefined) return first?.keyword === 'const' ? `must be ${String(first.schema)}` : undefined;
  const values = union.keyword === 'enum' ? (union.schema as unknown[]) : (union.schema as { const?: unknown }[]).map((branch) => branch.const);
  if (values.some((v) => v === undefined)) return undefined;
  return `must be one of ${values.map(String).join(', ')}`;
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
