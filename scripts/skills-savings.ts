/**
 * Bytes and tokens prompt_compaction saves on the shipped example
 * conversations (test/fixtures/conversations/). Run:
 * `node --import tsx scripts/skills-savings.ts`
 */
import { readdirSync, readFileSync } from 'node:fs';
import { countTokens } from 'gpt-tokenizer';
import { evaluatePromptCompaction } from '../src/skills/compaction/index.js';
import { stageInput, NO_DEADLINE } from '../test/helpers/stage-input.js';

const dir = new URL('../test/fixtures/conversations/', import.meta.url);
const ANY_TEXT = { disallowedSpecial: new Set<string>() };
const rows: string[][] = [['example', 'surface', 'bytes before', 'bytes saved', 'body tokens before', 'tokens saved', 'passes']];
for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
  const { surface, body } = JSON.parse(readFileSync(new URL(file, dir), 'utf8')) as { surface: string; body: unknown };
  // the body as a client sends it: compact JSON, so only the passes' savings are counted
  const input = stageInput('prompt_compaction', surface, body);
  const r = await evaluatePromptCompaction(input, NO_DEADLINE);
  const detail = r.detail ?? {};
  const passes = Object.entries((detail['passes'] ?? {}) as Record<string, number>)
    .filter(([, n]) => n > 0)
    .map(([p, n]) => `${p} ${n}`)
    .join(', ');
  rows.push([file.replace(/\.json$/, ''), surface, String(input.body.byteLength), String(detail['bytes_saved'] ?? 0), String(countTokens(input.text(), ANY_TEXT)), String(detail['tokens_saved'] ?? 0), passes]);
}
const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
for (const r of rows) process.stdout.write(`${r.map((c, i) => c.padEnd(widths[i]!)).join('  ')}\n`);
