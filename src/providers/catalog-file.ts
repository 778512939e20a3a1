import { readFileSync } from 'node:fs';
import { Type, type Static } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import { applyOperatorCatalog, SHIPPED_CATALOG, type CatalogModel } from './catalog.js';
import { PROVIDER_IDS } from './types.js';

/** one of `values`, as a JSON-schema enum so a wrong value is answered with the allowed ones, once */
const OneOf = <T extends string>(values: readonly T[]) => Type.Unsafe<T>({ type: 'string', enum: [...values] });
const CAPABILITIES: ReadonlyArray<CatalogModel['capabilities'][number]> = ['chat', 'tools', 'vision', 'reasoning', 'responses'];

const UsdPerMillion = (description: string) => Type.Number({ minimum: 0, maximum: 1_000_000, description });
const Tokens = (description: string) => Type.Integer({ minimum: 1, maximum: 100_000_000, description });

/** One operator entry: a price for a model the gateway ships with (an override), or a model it does not know. */
const CatalogFileEntry = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 256, pattern: '^\\S+$' }),
    provider: OneOf(PROVIDER_IDS),
    input: UsdPerMillion('USD per million prompt tokens'),
    output: UsdPerMillion('USD per million reply tokens'),
    cached_input: Type.Optional(UsdPerMillion('USD per million prompt tokens read from the vendor cache; default: input')),
    cache_write: Type.Optional(UsdPerMillion('USD per million prompt tokens written to the vendor cache; default: input')),
    context_window: Type.Optional(Tokens('prompt plus reply tokens the model takes')),
    max_output_tokens: Type.Optional(Tokens('most reply tokens the model gives')),
    capabilities: Type.Optional(Type.Array(OneOf(CAPABILITIES), { uniqueItems: true })),
  },
  { additionalProperties: false },
);
type CatalogFileEntry = Static<typeof CatalogFileEntry>;
const CatalogFile = Type.Array(CatalogFileEntry);

const ajv = new Ajv({ allErrors: true, strict: false });
const validate = ajv.compile<CatalogFileEntry[]>(CatalogFile);

/** a model the shipped catalog does not know, with nothing said of its size */
const NEW_MODEL_CONTEXT = 128_000;
const NEW_MODEL_CAPABILITIES: CatalogModel['capabilities'] = ['chat'];

export class CatalogFileError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`invalid GW_CATALOG_FILE ${file}:\n  ${problems.join('\n  ')}`);
  }
}

/** `entry 3 ("ft:gpt-4o-mini:acme:x")`: how a problem names the entry it is about */
function entryName(doc: unknown, index: number): string {
  const id = Array.isArray(doc) ? (doc[index] as { id?: unknown } | undefined)?.id : undefined;
  return typeof id === 'string' ? `entry ${index} (${JSON.stringify(id)})` : `entry ${index}`;
}

/** Every problem of the file's document, each naming its entry; none when it is valid. */
function problemsOf(doc: unknown): string[] {
  if (!Array.isArray(doc)) return ['must be a JSON array of model entries'];
  const problems: string[] = [];
  if (!validate(doc)) {
    for (const e of validate.errors ?? []) {
      const [, index, ...rest] = e.instancePath.split('/');
      // a missing property is named by Ajv's own message; an extra one only in its params
      const where = rest.length > 0 ? rest.join('.') : String(e.params['additionalProperty'] ?? '');
      const allowed = Array.isArray(e.params['allowedValues']) ? `: ${(e.params['allowedValues'] as unknown[]).join(', ')}` : '';
      problems.push(`${entryName(doc, Number(index))}: ${where ? `${where} ` : ''}${e.message ?? 'invalid'}${allowed}`);
    }
  }
  const seen = new Set<string>();
  doc.forEach((entry: { id?: unknown }, i) => {
    if (typeof entry?.id !== 'string') return;
    if (seen.has(entry.id)) problems.push(`${entryName(doc, i)}: the id appears more than once`);
    seen.add(entry.id);
  });
  return problems;
}

/** A catalog model from an entry: a shipped model's size and capabilities stay unless the entry says otherwise. */
function toModel(e: CatalogFileEntry): CatalogModel {
  const shipped = SHIPPED_CATALOG.find((m) => m.id === e.id);
  const context = e.context_window ?? shipped?.context_window ?? NEW_MODEL_CONTEXT;
  return {
    id: e.id,
    provider: e.provider,
    price: { input: e.input, output: e.output, cached_input: e.cached_input ?? e.input, cache_write: e.cache_write ?? e.input },
    context_window: context,
    max_output_tokens: e.max_output_tokens ?? shipped?.max_output_tokens ?? context,
    capabilities: e.capabilities ?? shipped?.capabilities ?? NEW_MODEL_CAPABILITIES,
  };
}

/**
 * Applies the operator's catalog file (GW_CATALOG_FILE) at start: each entry
 * overrides the shipped model of its id or adds a model. Without a file the
 * catalog is the shipped one. Throws CatalogFileError naming every bad entry.
 */
export function installCatalogFile(file: string | undefined): void {
  if (file === undefined) {
    applyOperatorCatalog([]);
    return;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new CatalogFileError(file, [err instanceof Error ? err.message : String(err)]);
  }
  const problems = problemsOf(doc);
  if (problems.length > 0) throw new CatalogFileError(file, problems);
  applyOperatorCatalog((doc as CatalogFileEntry[]).map(toModel));
}
