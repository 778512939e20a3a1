import { readFileSync } from 'node:fs';
import { Type, type Static } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import type { CatalogModel } from '../providers/catalog.js';

const Price = Type.Object(
  { input: Type.Number({ minimum: 0 }), output: Type.Number({ minimum: 0 }) },
  { additionalProperties: false, description: 'USD per million tokens' },
);

const Adapter = Type.Object(
  { base_model: Type.String({ minLength: 1 }), path: Type.String({ minLength: 1 }), size_mb: Type.Number({ exclusiveMinimum: 0 }) },
  { additionalProperties: false },
);

const ModelId = Type.String({ minLength: 1, maxLength: 256 });

export const DestinationSchema = Type.Object(
  {
    id: Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' }),
    provider: Type.Literal('selfhosted'),
    origin: Type.String({ pattern: '^https?://[^/?#\\s]+$' }),
    models: Type.Array(ModelId, { minItems: 1 }),
    max_inflight: Type.Optional(Type.Integer({ minimum: 1 })),
    adapter_memory_mb: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    adapters: Type.Optional(Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Adapter)),
    price: Type.Optional(Price),
    api_key: Type.Optional(Type.String({ pattern: '^[\\x21-\\x7e]{1,8192}$' })),
  },
  { additionalProperties: false },
);

/** One self-hosted model server as the operator describes it. */
export type DestinationEntry = Static<typeof DestinationSchema>;
export type AdapterEntry = Static<typeof Adapter>;

export class DestinationsFileError extends Error {
  constructor(
    file: string,
    readonly problems: string[],
  ) {
    super(`invalid GW_DESTINATIONS_FILE ${file}:\n  ${problems.join('\n  ')}`);
  }
}

const ajv = new Ajv({ allErrors: true, strict: false });
const validateEntry = ajv.compile<DestinationEntry>(DestinationSchema);

/** How an entry is named in a problem: its position, and its id when it has one. */
const entryName = (i: number, doc: unknown) => {
  const id = typeof doc === 'object' && doc !== null ? (doc as Record<string, unknown>)['id'] : undefined;
  return typeof id === 'string' ? `entry ${i} (${JSON.stringify(id)})` : `entry ${i}`;
};

/** What the schema cannot say: an adapter sits on a base model its destination holds, ids are unique, adapter and base names do not collide. */
function crossChecks(entries: readonly DestinationEntry[]): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  const bases = new Set(entries.flatMap((e) => e.models));
  entries.forEach((e, i) => {
    const name = entryName(i, e);
    if (seen.has(e.id)) problems.push(`${name}: id: another entry has this id`);
    seen.add(e.id);
    for (const [adapter, a] of Object.entries(e.adapters ?? {})) {
      if (!e.models.includes(a.base_model)) problems.push(`${name}: adapters.${adapter}.base_model: ${JSON.stringify(a.base_model)} is not one of this destination's models`);
      if (bases.has(adapter)) problems.push(`${name}: adapters.${adapter}: an adapter cannot have a base model's name`);
    }
  });
  return problems;
}

/**
 * Reads and validates the destinations file (GW_DESTINATIONS_FILE): a JSON
 * array of self-hosted servers. Every bad entry is named in one error. An
 * adapter larger than its destination's adapter memory is not an error here:
 * calls naming it are answered 507 adapter_unavailable.
 */
export function readDestinationsFile(file: string): DestinationEntry[] {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new DestinationsFileError(file, [err instanceof Error ? err.message : String(err)]);
  }
  if (!Array.isArray(doc)) throw new DestinationsFileError(file, ['must be a JSON array of destinations']);
  const problems: string[] = [];
  doc.forEach((entry: unknown, i) => {
    if (validateEntry(entry)) return;
    for (const e of validateEntry.errors ?? []) {
      const at = e.instancePath.replace(/^\//, '').replaceAll('/', '.') || String(e.params['missingProperty'] ?? e.params['additionalProperty'] ?? '');
      problems.push(`${entryName(i, entry)}: ${at}: ${e.message ?? 'invalid'}`);
    }
  });
  if (problems.length === 0) problems.push(...crossChecks(doc as DestinationEntry[]));
  if (problems.length > 0) throw new DestinationsFileError(file, problems);
  return doc as DestinationEntry[];
}

/** a self-hosted model's context is the server's to say; this is what the catalog assumes for routing */
const ASSUMED_CONTEXT = 32_768;

/**
 * The catalog entries of the destinations' models: each base model and each
 * adapter once, provider `selfhosted`, priced at the highest price any
 * destination holding it sets (a spend-cap reservation never under-reserves;
 * each call is then charged at its own destination's price).
 */
export function destinationModels(entries: readonly DestinationEntry[]): CatalogModel[] {
  const byId = new Map<string, CatalogModel>();
  const add = (id: string, price: DestinationEntry['price'], base?: string) => {
    const input = price?.input ?? 0;
    const output = price?.output ?? 0;
    const known = byId.get(id);
    const model: CatalogModel = {
      id,
      provider: 'selfhosted',
      price: { input: Math.max(input, known?.price.input ?? 0), output: Math.max(output, known?.price.output ?? 0), cached_input: Math.max(input, known?.price.input ?? 0), cache_write: Math.max(input, known?.price.input ?? 0) },
      context_window: ASSUMED_CONTEXT,
      max_output_tokens: ASSUMED_CONTEXT,
      capabilities: ['chat'],
      ...(base === undefined ? {} : { base_model: base }),
    };
    byId.set(id, model);
  };
  for (const e of entries) {
    for (const m of e.models) add(m, e.price);
    for (const [name, a] of Object.entries(e.adapters ?? {})) add(name, e.price, a.base_model);
  }
  return [...byId.values()];
}
