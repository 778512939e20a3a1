import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Route } from '../../src/http/types.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'src', 'main.ts');

/**
 * Every route src/main.ts assembles: each `...xRoutes(` spread there is a
 * builder imported from a module; calling it lists its routes. Builders only
 * close over their dependencies, so an inert stand-in serves as each argument
 * (no handler runs here).
 */
export async function registeredRoutes(): Promise<Array<Pick<Route, 'method' | 'path'>>> {
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

