import type { Static, TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { GatewayError } from '../errors.js';

const ajv = new Ajv({ allErrors: false, strict: false });
// ajv-formats ships CommonJS; its default export arrives wrapped under NodeNext
const addFormats = addFormatsModule as unknown as (a: Ajv) => Ajv;
addFormats(ajv);

/** The dotted path of the field an Ajv error is about: arrays indexed with dots, a missing or unknown property named. */
function fieldOf(e: ErrorObject): string {
  const path = e.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (e.keyword === 'required') path.push(String(e.params['missingProperty']));
  if (e.keyword === 'additionalProperties') path.push(String(e.params['additionalProperty']));
  return path.join('.');
}

const MESSAGES: Partial<Record<string, (e: ErrorObject) => string>> = {
  additionalProperties: () => 'unknown field',
  required: () => 'required',
};

/**
 * What one failed validation says, as every route says it: the field at
 * fault as a dotted path from the value (`execution.max_tokens`, `reason`;
 * '' for the value itself) and what is wrong with it. The field is the
 * deepest path reported (a union reports each of its branches); where the
 * union itself failed at that path, the message is that of the branch whose
 * type the value has (`stop: []`: too few items), else it lists what the
 * branches accept (`must be "success" or "failure"`).
 */
function describeSchemaErrors(errors: readonly ErrorObject[]): { field: string; message: string } {
  if (errors.length === 0) return { field: '', message: 'invalid' };
  const deepest = errors.reduce((a, b) => (fieldOf(b).length > fieldOf(a).length ? b : a));
  const field = fieldOf(deepest);
  const here = errors.filter((e) => fieldOf(e) === field);
  if (here.some((e) => e.keyword === 'anyOf')) {
    const ofItsType = here.find((e) => e.keyword !== 'anyOf' && e.keyword !== 'type' && e.keyword !== 'const');
    if (ofItsType) return { field, message: MESSAGES[ofItsType.keyword]?.(ofItsType) ?? ofItsType.message ?? 'invalid' };
    // per branch (its schema path), its value where it is a literal (which also reports its type), else its type
    const branches = new Map<string, string>();
    for (const e of here) {
      const branch = e.schemaPath.slice(0, e.schemaPath.lastIndexOf('/'));
      if (e.keyword === 'const') branches.set(branch, JSON.stringify(e.params['allowedValue']));
      else if (e.keyword === 'type' && !branches.has(branch)) branches.set(branch, String(e.params['type']));
    }
    const accepted = new Set(branches.values());
    return { field, message: accepted.size > 0 ? `must be ${[...accepted].join(' or ')}` : 'does not match any accepted shape' };
  }
  if (deepest.keyword === 'const') return { field, message: `must be ${JSON.stringify(deepest.params['allowedValue'])}` };
  return { field, message: MESSAGES[deepest.keyword]?.(deepest) ?? deepest.message ?? 'invalid' };
}

/**
 * Compiles a TypeBox schema into a parser that throws a 400 request_error
 * naming the field (describeSchemaErrors), under `what` when the value is
 * itself a field or a file (`skill_params.…`, `GW_BOOTSTRAP.…`); `body` when
 * the body itself is at fault.
 */
export function compileSchema<S extends TSchema>(schema: S): (value: unknown, what?: string) => Static<S> {
  const validate = ajv.compile<Static<S>>(schema);
  return (value, what) => {
    if (validate(value)) return value;
    const described = describeSchemaErrors(validate.errors ?? []);
    const field = [what, described.field].filter((f) => f !== undefined && f !== '').join('.') || 'body';
    throw new GatewayError('request_error', `${field}: ${described.message}`, { fields: { field } });
  };
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
