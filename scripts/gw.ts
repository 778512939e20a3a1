/**
 * gw: the gateway's admin CLI. It speaks only the gateway's documented HTTP
 * routes (docs/api.md): admin routes with the deployment admin key, an org's
 * own settings and usage with one of its developer keys.
 *
 *   npm run admin -- <command> [flags]      (or `npx gw`, from the package's bin)
 *
 * Exit codes: 0 done; 2 the command line was wrong; 3 the gateway could not be
 * reached; 4 the gateway answered with an error (its type and message printed).
 */
import { randomBytes } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';

export const EXIT = { ok: 0, usage: 2, unreachable: 3, http: 4 } as const;

class CliError extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
  ) {
    super(message);
  }
}

const usageError = (message: string) => new CliError(EXIT.usage, `${message} (gw help lists the commands)`);

const HELP = `gw: administer a model gateway over its HTTP routes

Usage: gw <command> [arguments] [flags]

Admin commands (deployment admin key: --admin-key or GW_ADMIN_KEY):
  orgs list
  orgs create <org_id> [--parent <org_id>] [--plan free|team|enterprise] [--rps-cap <n>]
  keys list <org_id>
  keys create <org_id> [--name <text>] [--dev-key-id <id>] [--expires-at <ISO date-time, e.g. 2027-01-31T00:00:00Z>]
  keys revoke <key_id|dev_key_id>

Org commands (one of the org's developer keys: --key or GW_KEY):
  settings                                   the org's configuration (secrets only as hints)
  provider-keys set <provider> --api-key <k> [--endpoint <url>] [--region <r>] [--project <p>] [--location <l>] [--credential-kind <kind>]
  provider-keys delete <provider>
  spend-cap set <usd|none> [--period day|month]
  model-access set <model,...|all>
  usage [--group-by <dims>] [--window <w>] [--bucket <b>] [--limit <n>]

Local (no gateway):
  secrets-key                                a new GW_SECRETS_KEY (32 random bytes, base64)

Flags for every command:
  --url <url>          the gateway (GW_URL; default http://127.0.0.1:8080)
  --json               print the gateway's JSON answer instead of a table
  --tenant <org_id>    org commands: act on a sub-tenant of the key's org
  -h, --help
`;

const OPTIONS = {
  url: { type: 'string' },
  'admin-key': { type: 'string' },
  key: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  tenant: { type: 'string' },
  parent: { type: 'string' },
  plan: { type: 'string' },
  'rps-cap': { type: 'string' },
  name: { type: 'string' },
  'dev-key-id': { type: 'string' },
  'expires-at': { type: 'string' },
  'api-key': { type: 'string' },
  endpoint: { type: 'string' },
  region: { type: 'string' },
  project: { type: 'string' },
  location: { type: 'string' },
  'credential-kind': { type: 'string' },
  period: { type: 'string' },
  'group-by': { type: 'string' },
  window: { type: 'string' },
  bucket: { type: 'string' },
  limit: { type: 'string' },
} satisfies ParseArgsConfig['options'];

type Flags = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true; strict: true }>>['values'];

export interface Io {
  env: Readonly<Record<string, string | undefined>>;
  out(text: string): void;
}

interface Context {
  flags: Flags;
  io: Io;
  args: string[];
}

/** One call to the gateway: the parsed JSON answer, or a CliError naming what went wrong. */
async function request(ctx: Context, credential: 'admin' | 'key', method: 'GET' | 'POST', path: string, body?: unknown): Promise<Record<string, unknown>> {
  const base = (ctx.flags.url ?? ctx.io.env['GW_URL'] ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
  const secret = credential === 'admin' ? (ctx.flags['admin-key'] ?? ctx.io.env['GW_ADMIN_KEY']) : (ctx.flags.key ?? ctx.io.env['GW_KEY']);
  if (!secret) {
    throw usageError(credential === 'admin' ? 'this command needs the admin key: --admin-key or GW_ADMIN_KEY' : 'this command needs a developer key of the org: --key or GW_KEY');
  }
  let url: URL;
  try {
    url = new URL(path, `${base}/`);
  } catch {
    throw usageError(`--url: not a URL: ${base}`);
  }
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers: { authorization: `Bearer ${secret}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new CliError(EXIT.unreachable, `cannot reach the gateway at ${base}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
  }
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
  } catch {
    if (res.ok) throw new CliError(EXIT.http, `${method} ${url.pathname}: the gateway answered ${res.status} with a body that is not JSON`);
  }
  if (!res.ok) {
    const error = json['error'] as { type?: string; message?: string } | undefined;
    throw new CliError(EXIT.http, `${method} ${url.pathname}: HTTP ${res.status} ${error?.type ?? 'error'}: ${error?.message ?? text.slice(0, 200)}`);
  }
  return json;
}

/** A plain-text table: one header row, columns padded to their widest cell. */
export function table(rows: Array<Record<string, unknown>>, columns: string[]): string {
  if (rows.length === 0) return '(none)\n';
  const cell = (v: unknown) => (v === null || v === undefined ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v));
  const cells = [columns.map((c) => c.toUpperCase()), ...rows.map((r) => columns.map((c) => cell(r[c])))];
  const widths = columns.map((_, i) => Math.max(...cells.map((row) => row[i]!.length)));
  return cells.map((row) => row.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n') + '\n';
}

function print(ctx: Context, answer: Record<string, unknown>, human: () => string): void {
  ctx.io.out(ctx.flags.json ? `${JSON.stringify(answer, null, 2)}\n` : human());
}

const listOf = (answer: Record<string, unknown>) => (answer['data'] ?? []) as Array<Record<string, unknown>>;

/** The nth positional argument, or a usage error naming it. */
function arg(ctx: Context, index: number, name: string): string {
  const value = ctx.args[index];
  if (value === undefined) throw usageError(`missing <${name}>`);
  return value;
}

function number(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw usageError(`--${flag}: not a number: ${value}`);
  return n;
}

/** Drops the undefined fields, so the gateway sees only what was given. */
const defined = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

const withTenant = (ctx: Context, body: Record<string, unknown>) => defined({ ...body, tenant_id: ctx.flags.tenant });

type Command = (ctx: Context) => Promise<void>;

const COMMANDS: Record<string, Command> = {
  async 'orgs list'(ctx) {
    const answer = await request(ctx, 'admin', 'GET', 'api/v1/admin/orgs');
    print(ctx, answer, () => table(listOf(answer), ['org_id', 'parent_org_id', 'plan', 'rps_cap', 'created_at']));
  },
  async 'orgs create'(ctx) {
    const body = defined({ org_id: arg(ctx, 0, 'org_id'), parent_org_id: ctx.flags.parent, plan: ctx.flags.plan, rps_cap: number(ctx.flags['rps-cap'], 'rps-cap') });
    const answer = await request(ctx, 'admin', 'POST', 'api/v1/admin/orgs', body);
    print(ctx, answer, () => table([answer], ['org_id', 'parent_org_id', 'plan', 'rps_cap', 'created_at']));
  },
  async 'keys list'(ctx) {
    const answer = await request(ctx, 'admin', 'GET', `api/v1/admin/dev_keys?org_id=${encodeURIComponent(arg(ctx, 0, 'org_id'))}`);
    print(ctx, answer, () => table(listOf(answer), ['key_id', 'dev_key_id', 'name', 'created_at', 'expires_at', 'revoked_at']));
  },
  async 'keys create'(ctx) {
    const body = defined({ org_id: arg(ctx, 0, 'org_id'), name: ctx.flags.name, dev_key_id: ctx.flags['dev-key-id'], expires_at: ctx.flags['expires-at'] });
    const answer = await request(ctx, 'admin', 'POST', 'api/v1/admin/dev_keys', body);
    print(ctx, answer, () => `${table([answer], ['key_id', 'dev_key_id', 'org_id'])}api_key: ${String(answer['api_key'])}\n(shown once: the gateway keeps only its hash)\n`);
  },
  async 'keys revoke'(ctx) {
    const id = arg(ctx, 0, 'key_id|dev_key_id');
    const answer = await request(ctx, 'admin', 'POST', 'api/v1/admin/dev_keys/revoke', id.startsWith('key_') ? { key_id: id } : { dev_key_id: id });
    print(ctx, answer, () => table([answer], ['key_id', 'dev_key_id', 'revoked_at']));
  },
  async settings(ctx) {
    const query = ctx.flags.tenant === undefined ? '' : `?tenant_id=${encodeURIComponent(ctx.flags.tenant)}`;
    const answer = await request(ctx, 'key', 'GET', `api/v1/settings${query}`);
    print(ctx, answer, () => {
      const cap = answer['spend_cap'] as Record<string, unknown>;
      const models = (answer['model_access'] as { models: string[] | null }).models;
      return [
        table([answer], ['org_id', 'parent_org_id', 'plan', 'rps_cap']),
        `spend cap: ${cap['cap_usd'] === null ? 'none' : `${String(cap['cap_usd'])} USD per ${String(cap['period'])}, ${String(cap['consumed_usd'])} used`}`,
        `model access: ${models === null ? 'all catalog models' : models.join(', ') || '(none)'}`,
        'provider keys:',
        table(answer['vendor_keys'] as Array<Record<string, unknown>>, ['provider', 'key_hint', 'credential_kind']),
      ].join('\n');
    });
  },
  async 'provider-keys set'(ctx) {
    const apiKey = ctx.flags['api-key'];
    if (apiKey === undefined) throw usageError('--api-key: required (the provider credential to store)');
    const { endpoint, region, project, location } = ctx.flags;
    const body = withTenant(ctx, { provider: arg(ctx, 0, 'provider'), api_key: apiKey, credential_kind: ctx.flags['credential-kind'], endpoint, region, project, location });
    const answer = await request(ctx, 'key', 'POST', 'api/v1/vendor_key/create', body);
    print(ctx, answer, () => table([answer], ['provider', 'key_hint', 'credential_kind']));
  },
  async 'provider-keys delete'(ctx) {
    const answer = await request(ctx, 'key', 'POST', 'api/v1/vendor_key/delete', withTenant(ctx, { provider: arg(ctx, 0, 'provider') }));
    print(ctx, answer, () => table([answer], ['provider', 'deleted']));
  },
  async 'spend-cap set'(ctx) {
    const given = arg(ctx, 0, 'usd|none');
    const cap = given === 'none' ? null : number(given, 'usd');
    const answer = await request(ctx, 'key', 'POST', 'api/v1/spend_cap/update', withTenant(ctx, { cap_usd: cap, period: ctx.flags.period }));
    print(ctx, answer, () => table([answer['spend_cap'] as Record<string, unknown>], ['cap_usd', 'period', 'consumed_usd', 'resets_at']));
  },
  async 'model-access set'(ctx) {
    const given = arg(ctx, 0, 'model,...|all');
    const models = given === 'all' ? null : given.split(',').map((m) => m.trim()).filter(Boolean);
    const answer = await request(ctx, 'key', 'POST', 'api/v1/model_access/update', withTenant(ctx, { models }));
    const enabled = (answer['model_access'] as { models: string[] | null }).models;
    print(ctx, answer, () => `model access: ${enabled === null ? 'all catalog models' : enabled.join(', ') || '(none)'}\n`);
  },
  async usage(ctx) {
    const query = new URLSearchParams(
      defined({ group_by: ctx.flags['group-by'], window: ctx.flags.window, bucket: ctx.flags.bucket, limit: ctx.flags.limit, tenant_id: ctx.flags.tenant }) as Record<string, string>,
    );
    const answer = await request(ctx, 'key', 'GET', `api/v1/usage${query.size > 0 ? `?${query.toString()}` : ''}`);
    print(ctx, answer, () => {
      const rows = listOf(answer);
      // the group-by dimensions lead, then whatever measures the gateway reports
      const dims = (answer['group_by'] as string[] | undefined) ?? [];
      const columns = [...new Set([...(answer['bucket'] === null ? [] : ['bucket']), ...dims, ...rows.flatMap((r) => Object.keys(r))])];
      return `window ${String(answer['window'])}, source ${String(answer['source'])}\n${table(rows, columns)}`;
    });
  },
  async 'secrets-key'(ctx) {
    const key = randomBytes(32).toString('base64');
    ctx.io.out(ctx.flags.json ? `${JSON.stringify({ GW_SECRETS_KEY: key })}\n` : `GW_SECRETS_KEY=${key}\n`);
  },
};

/** Runs one command line; resolves to the exit code (errors already written to `err`). */
export async function run(argv: string[], io: Io & { err(text: string): void }): Promise<number> {
  let parsed: { values: Flags; positionals: string[] };
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    io.err(`gw: ${(err as Error).message} (gw help lists the commands)\n`);
    return EXIT.usage;
  }
  const [first, second, ...rest] = parsed.positionals;
  if (first === undefined || first === 'help' || parsed.values.help) {
    io.out(HELP);
    return first === undefined && !parsed.values.help ? EXIT.usage : EXIT.ok;
  }
  const twoWord = second === undefined ? undefined : `${first} ${second}`;
  const name = twoWord !== undefined && twoWord in COMMANDS ? twoWord : first;
  const command = COMMANDS[name];
  if (command === undefined) {
    // "gw orgs" (or "gw orgs lst"): name the commands that begin with the word given
    const family = Object.keys(COMMANDS).filter((c) => c.startsWith(`${first} `));
    const hint = family.length > 0 ? `; ${first} takes: ${family.map((c) => c.slice(first.length + 1)).join(', ')}` : '';
    io.err(`gw: unknown command: ${[first, second].filter(Boolean).join(' ')}${hint} (gw help lists the commands)\n`);
    return EXIT.usage;
  }
  const args = name === twoWord ? rest : [second, ...rest].filter((a): a is string => a !== undefined);
  try {
    await command({ flags: parsed.values, io, args });
    return EXIT.ok;
  } catch (err) {
    if (!(err instanceof CliError)) throw err;
    io.err(`gw ${name}: ${err.message}\n`);
    return err.exitCode;
  }
}

/** Runs the process's command line and sets its exit code (bin/gw.mjs calls this too). */
export async function main(): Promise<void> {
  process.exitCode = await run(process.argv.slice(2), {
    env: process.env,
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
  });
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
