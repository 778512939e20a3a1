import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { modelStage, regexStage } from '../src/skills/guardrails/stage.js';
import type { Evaluator } from '../src/skills/stage.js';
import { NO_DEADLINE, stageInput } from '../test/helpers/stage-input.js';

/**
 * What the two guardrail stages cost on one thread, in the pool thread's own
 * terms (the stage from the body's bytes to its result), on four chat bodies:
 * the bench's repeated sentence (2 KB), prose made of the shipped dataset's
 * negatives (2 KB and 32 KB: other languages, encoded snippets, and mentions
 * of rot13 and reversed text, which add views), and the PII scenario's body
 * (32 KB). Prints the median of 7 timed rounds per stage and body.
 *
 *   node --import tsx bench/guardrail-stages.ts [--rounds 7]
 *
 * Pin it to one core (`taskset -c 1`) on a shared machine; compare builds
 * within one run of the same machine only.
 */
const { values } = parseArgs({ options: { rounds: { type: 'string', default: '7' } } });
const ROOT = resolve(import.meta.dirname, '..');

const negatives = readFileSync(join(ROOT, 'data/guardrails/examples.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as { text: string; label: number })
  .filter((e) => e.label === 0)
  .map((e) => e.text);
const prose = (chars: number) => {
  let s = '';
  for (let i = 0; s.length < chars; i++) s += `${negatives[i % negatives.length]} `;
  return s.slice(0, chars);
};
const chat = (content: string) => JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content }] });
const bodies: Record<string, string> = {
  'repeated sentence, 2 KB': chat('The quick brown fox jumps over the lazy dog. '.repeat(50).slice(0, 1950)),
  'prose, 2 KB': chat(prose(1950)),
  'prose, 32 KB': chat(prose(32_000)),
  'personal data, 32 KB': chat('Please write to jane.doe@example.com or call +1 415 555 0100 about the order. '.repeat(420).slice(0, 32_000)),
};

/** the stage's median time on `body`; each call gets its own input (the body's bytes, decoded and parsed by the stage) */
function medianMs(stage: Evaluator, body: string, acting: boolean): number {
  const once = () => stage(stageInput('bench', 'chat_completions', body, acting), NO_DEADLINE);
  const perRound = body.length > 10_000 ? 20 : 200;
  for (let i = 0; i < perRound; i++) once();
  const rounds: number[] = [];
  for (let r = 0; r < Number(values.rounds); r++) {
    const t0 = performance.now();
    for (let i = 0; i < perRound; i++) once();
    rounds.push((performance.now() - t0) / perRound);
  }
  return rounds.sort((a, b) => a - b)[rounds.length >> 1]!;
}

process.stdout.write('| body | regex stage ms | classifier stage ms |\n|---|--:|--:|\n');
for (const [name, body] of Object.entries(bodies)) {
  process.stdout.write(`| ${name} | ${medianMs(regexStage, body, true).toFixed(3)} | ${medianMs(modelStage, body, false).toFixed(3)} |\n`);
}
