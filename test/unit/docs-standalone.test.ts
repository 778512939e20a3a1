import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SettingsSchema } from '../../src/settings.js';
import { registeredRoutes } from '../helpers/routes.js';

/**
 * README.md and docs/ are all a reader of this repository has: they may not
 * send the reader to documents kept elsewhere; docs/api.md must describe
 * every route the gateway serves and docs/operations.md every setting.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DOCS = join(ROOT, 'docs');

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
