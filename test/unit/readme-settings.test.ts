import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { readBlock } from '../../scripts/doc-blocks.js';
import { BLOCK, MEANING, NOT_YET_ENFORCED, README, settingsTable } from '../../scripts/settings-table.js';
import { SettingsSchema } from '../../src/settings.js';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

test("README's configuration table is the one the settings schema prints (regenerate: node --import tsx scripts/settings-table.ts --write)", () => {
  assert.equal(readBlock(README, BLOCK), settingsTable());
});

test('every GW_ setting has a meaning, and no meaning names a setting that is gone', () => {
  const names = Object.keys(SettingsSchema.properties);
  for (const name of names) {
    const s = SettingsSchema.properties[name as keyof typeof SettingsSchema.properties] as { description?: string };
    assert.ok(s.description !== undefined || MEANING[name] !== undefined, `${name} has neither a schema description nor a MEANING entry`);
  }
  for (const name of [...Object.keys(MEANING), ...NOT_YET_ENFORCED]) assert.ok(names.includes(name), `${name} is documented but not in the schema`);
});

test('a setting documented as "not yet acted on" is read by no code but its /healthz lever', () => {
  const files = sourceFiles(SRC).filter((f) => !f.endsWith(`${join('src', 'settings.ts')}`));
  for (const name of NOT_YET_ENFORCED) {
    const uses = files.flatMap((f) => (readFileSync(f, 'utf8').match(new RegExp(`\\b${name}\\b`, 'g')) ?? []).map(() => f));
    const elsewhere = uses.filter((f) => !f.endsWith(join('src', 'main.ts')));
    assert.deepEqual(elsewhere, [], `${name} is now read by ${elsewhere.join(', ')}: document what it does and drop it from NOT_YET_ENFORCED`);
    assert.ok(uses.length <= 1, `${name} is used ${uses.length} times in src/main.ts: document what it does and drop it from NOT_YET_ENFORCED`);
  }
});
