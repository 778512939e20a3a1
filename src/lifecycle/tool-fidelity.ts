import { createHash } from 'node:crypto';
import { Ajv, type ValidateFunction } from 'ajv';

/**
 * Tool-call fidelity of one chat-completions reply: do the tool calls it makes
 * name a tool the request declared, and do their arguments parse as JSON and
 * validate against that tool's declared parameter schema? Called at accounting
 * with the parsed request and reply bodies; the row keeps the answer.
 */

/** compiled schemas kept, least recently used dropped first: tools repeat across a key's calls */
const MAX_VALIDATORS = 256;

const ajv = new Ajv({ strict: false, allErrors: false, validateSchema: true });
/** by schema hash: the validator (null when the schema does not compile) and the schema object Ajv caches it under */
const validators = new Map<string, { validate: ValidateFunction | null; schema: object }>();

/** The compiled validator of a schema (null when the schema itself does not compile), cached by the schema's hash. */
function validatorFor(declared: unknown): ValidateFunction | null {
  const text = JSON.stringify(declared ?? {});
  const hash = createHash('sha256').update(text).digest('base64url');
  const cached = validators.get(hash);
  if (cached !== undefined) {
    // refresh its place: Map keeps insertion order, so the oldest entry is the least recently used
    validators.delete(hash);
    validators.set(hash, cached);
    return cached.validate;
  }
  const schema = JSON.parse(text) as object;
  let validate: ValidateFunction | null;
  try {
    validate = ajv.compile(schema);
  } catch {
    validate = null;
  }
  validators.set(hash, { validate, schema });
  if (validators.size > MAX_VALIDATORS) {
    const [oldest, entry] = validators.entries().next().value as [string, { schema: object }];
    validators.delete(oldest);
    // Ajv keeps its own compiled copy per schema object: drop it too, or the bound holds only here
    ajv.removeSchema(entry.schema);
  }
  return validate;
}

/** How many validators are cached (for the bound's test). */
export const cachedValidators = (): number => validators.size;

const asRecord = (v: unknown): Record<string, unknown> | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);

/** The declared function tools of a chat-completions request: name → parameters schema. */
function declaredTools(request: unknown): Map<string, unknown> | undefined {
  const tools = asRecord(request)?.['tools'];
  if (!Array.isArray(tools) || tools.length === 0) return undefined;
  const out = new Map<string, unknown>();
  for (const tool of tools) {
    const fn = asRecord(asRecord(tool)?.['function']);
    if (fn && typeof fn['name'] === 'string') out.set(fn['name'], fn['parameters'] ?? {});
  }
  return out.size === 0 ? undefined : out;
}

/**
 * true when every tool call of every choice names a declared tool and its
 * arguments validate; false at the first that does not; null when the request
 * declared no tools (such replies are not counted). A reply without tool calls
 * is faithful: it called nothing it could get wrong. A declared schema that does
 * not compile checks only that the arguments are a JSON object.
 */
export function toolCallFidelity(request: unknown, reply: unknown): boolean | null {
  const tools = declaredTools(request);
  if (tools === undefined) return null;
  const choices = asRecord(reply)?.['choices'];
  if (!Array.isArray(choices)) return true;
  for (const choice of choices) {
    const calls = asRecord(asRecord(choice)?.['message'])?.['tool_calls'];
    if (calls === undefined || calls === null) continue;
    if (!Array.isArray(calls)) return false;
    for (const call of calls) {
      const fn = asRecord(asRecord(call)?.['function']);
      const name = fn?.['name'];
      if (typeof name !== 'string' || !tools.has(name)) return false;
      let args: unknown;
      try {
        args = JSON.parse(typeof fn?.['arguments'] === 'string' ? (fn['arguments'] as string) : '');
      } catch {
        return false;
      }
      const validate = validatorFor(tools.get(name));
      if (validate === null ? asRecord(args) === undefined : !validate(args)) return false;
    }
  }
  return true;
}
