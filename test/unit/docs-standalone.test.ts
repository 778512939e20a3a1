import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Route } from '../../src/http/types.js';
import { SettingsSchema } from '../../src/settings.js';

/**
 * README.md and docs/ are all a reader of this repository has: they may not
 * send the reader to documents kept elsewhere; docs/api.md must describe
 * every route the gateway serves and docs/operations.md every setting.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DOCS = join(ROOT, 'docs');
const MAIN = join(ROOT, 'src', 'main.ts');

const docFiles = (): string[] => [join(ROOT, 'README.md'), ...readdirSync(DOCS).filter((f) => f.endsWith('.md')).map((f) => join(DOCS, f))];

/** References to documents outside this repository, or to their numbered sections. */
const OUTSIDE_REFERENCES: ReadonlyArray<[name: string, pattern: RegExp]> = [
  ['SPEC / SPEC.md', /\bSPEC\b/],
  ['CONTRACT / CONTRACT.md', /\bCONTRACT\b/],
  ['DESIGN.md', /\bDESIGN\.md\b/],
  ['NOTES-skills.md', /\bNOTES-skills\.md\b/],
  ['shared/', /(^|[\s/`(.])shared\//],
  ['a § section reference', /§/],
];

/**
 * Every route src/main.ts assembles: each `...xRoutes(` spread there is a
 * builder imported from a module; calling it lists its routes. Builders only
 * close over their dependencies, so an inert stand-in serves as each argument
 * (no handler runs here).
 */
async function registeredRoutes(): Promise<Array<Pick<Route, 'method' | 'path'>>> {
  const main = readFileSync(MAIN, 'utf8');
  const modules = new Map<string, string>();
  for (const m of main.matchAll(/import\s*\{([^}]+)\}\s*from\s*'(\.[^']+)'/g)) {
    for (const name of (m[1] as string).split(',').map((n) => n.trim().replace(/^type\s+/, ''))) modules.set(name, m[2] as string);
  }
  const builders = [...new Set([...main.matchAll(/\.\.\.(\w+Routes)\(/g)].map((m) => m[1] as string))];
  assert.ok(builders.length >= 8, `found only ${builders.length} route builders spread in src/main.ts: the test no longer reads main.ts right`);
  // a builder handing its route rows to a dependency (pipeline.routes(ROWS)) gets the rows back
  const inert: unknown = new Proxy(() => inert, { get: (_t, p) => (p === 'then' ? undefined : inert), apply: (_t, _this, args: unknown[]) => (Array.isArray(args[0]) ? args[0] : inert) });
  const routes: Array<Pick<Route, 'method' | 'path'>> = [];
  for (const builder of builders) {
    const from = modules.get(builder);
    assert.ok(from !== undefined, `${builder} is spread in src/main.ts but not imported there by name`);
    const mod = (await import(pathToFileURL(join(ROOT, 'src', from.replace(/\.js$/, '.ts'))).href)) as Record<string, (...args: unknown[]) => Route[]>;
    const build = mod[builder];
    assert.equal(typeof build, 'function', `${from} does not export ${builder}`);
    routes.push(...(build as (...args: unknown[]) => Route[])(inert, inert, inert).map(({ method, path }) => ({ method, path })));
  }
  return routes;
}

/** A route as docs/api.md writes it: `:name` segments as `{name}`. */
const documented = (path: string) => path.replace(/:([A-Za-z_]+)/g, '{$1}');

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('README.md and docs/ stand alone', () => {
  for (const file of docFiles()) {
    it(`${file.slice(ROOT.length)} names no document outside this repository`, () => {
      const lines = readFileSync(file, 'utf8').split('\n');
      const found = lines.flatMap((line, i) => OUTSIDE_REFERENCES.filter(([, re]) => re.test(line)).map(([name]) => `line ${i + 1}: ${name}: ${line.trim().slice(0, 120)}`));
      assert.deepEqual(found, []);
    });
  }

  it('docs/api.md names every route src/main.ts serves, as `METHOD path`', async () => {
    const api = readFileSync(join(DOCS, 'api.md'), 'utf8');
    const routes = await registeredRoutes();
    assert.ok(routes.length >= 20, `only ${routes.length} routes found`);
    // the path must end where it is written: `POST /v1/messages` is not `POST /v1/messages/count_tokens`
    const missing = routes.map((r) => `${r.method} ${documented(r.path)}`).filter((r) => !new RegExp(`${escape(r)}(?![\\w/{}-])`).test(api));
    assert.deepEqual(missing, [], 'routes served but not in docs/api.md');
  });

  it('docs/operations.md explains every GW_ setting of src/settings.ts', () => {
    const ops = readFileSync(join(DOCS, 'operations.md'), 'utf8');
    const missing = Object.keys(SettingsSchema.properties).filter((name) => !new RegExp(`\`${name}\``).test(ops));
    assert.deepEqual(missing, [], 'settings not named in docs/operations.md');
  });
});
