/**
 * Bytes and tokens prompt_compaction saves on the shipped example
 * conversations (test/fixtures/conversations/), and what
 * agent_trajectory_compaction folds on them and on the synthetic agent
 * conversation of the tests (test/helpers/agent-conversation.ts), with each
 * fold's dollar ledger. Run: `node --import tsx scripts/skills-savings.ts`
 */
import { readdirSync, readFileSync } from 'node:fs';
import { evaluatePromptCompaction } from '../src/skills/compaction/index.js';
import type { StageContext } from '../src/skills/stage.js';
import { textTokens } from '../src/skills/tokens.js';
import { evaluateTrajectoryCompaction } from '../src/skills/trajectory/index.js';
import type { FoldParams } from '../src/tenancy/skills.js';
import { AGENT_SURFACES, agentBody } from '../test/helpers/agent-conversation.js';
import { stageInput, NO_DEADLINE } from '../test/helpers/stage-input.js';

const dir = new URL('../test/fixtures/conversations/', import.meta.url);

function table(rows: string[][]): void {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows) process.stdout.write(`${r.map((c, i) => c.padEnd(widths[i]!)).join('  ')}\n`);
  process.stdout.write('\n');
}

const examples = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((file) => ({ name: file.replace(/\.json$/, ''), ...(JSON.parse(readFileSync(new URL(file, dir), 'utf8')) as { surface: string; body: unknown }) }));

const compaction: string[][] = [['example', 'surface', 'bytes before', 'bytes saved', 'body tokens before', 'tokens saved', 'passes']];
for (const { name, surface, body } of examples) {
  // the body as a client sends it: compact JSON, so only the passes' savings are counted
  const input = stageInput('prompt_compaction', surface, body);
  const r = await evaluatePromptCompaction(input, NO_DEADLINE);
  const detail = r.detail ?? {};
  const passes = Object.entries((detail['passes'] ?? {}) as Record<string, number>)
    .filter(([, n]) => n > 0)
    .map(([p, n]) => `${p} ${n}`)
    .join(', ');
  compaction.push([name, surface, String(input.body.byteLength), String(detail['bytes_saved'] ?? 0), String(textTokens(input.text())), String(detail['tokens_saved'] ?? 0), passes]);
}
table(compaction);

/** generate-content and converse name the model in the URL: priced here as these */
const URL_MODEL: Record<string, string> = { generate_content: 'gemini-2.5-pro', converse: 'anthropic.claude-sonnet-4-5-20250929-v1:0' };
const SETTINGS: Array<[string, FoldParams]> = [
  ['defaults', {}],
  ['keep 2, min 200, ratio 0.9', { keep_recent_turns: 2, min_fold_tokens: 200, max_fold_ratio: 0.9 }],
];
const usd = (v: unknown) => (typeof v === 'number' ? `$${v.toFixed(6)}` : '-');
const folding: string[][] = [['example', 'surface', 'params', 'outcome', 'prompt tokens', 'tokens saved', 'usd saved', 'cache loss', 'net']];
const agent = AGENT_SURFACES.map((surface) => ({ name: 'agent (8 tool rounds)', surface, body: agentBody(surface) as unknown }));
for (const { name, surface, body } of [...examples, ...agent]) {
  for (const [label, foldParams] of SETTINGS) {
    const context: StageContext = { foldParams, ...(URL_MODEL[surface] === undefined ? {} : { model: URL_MODEL[surface] }) };
    const r = evaluateTrajectoryCompaction(stageInput('agent_trajectory_compaction', surface, body, true, context), NO_DEADLINE);
    const d = r.detail ?? {};
    const ledger = (d['ledger'] ?? {}) as Record<string, unknown>;
    folding.push([name, surface, label, r.outcome, String(d['prompt_tokens'] ?? '-'), String(d['tokens_saved'] ?? 0), usd(ledger['usd_saved']), usd(ledger['cache_loss_usd']), usd(ledger['net_usd'])]);
  }
}
table(folding);
