// Checks that the compiled skill pool starts its worker from dist/ (worker.js,
// not the tsx shim) and runs a stage there, and that the tokenizer thread
// starts from dist/ too (token-thread.js) and counts. Plain JavaScript, run
// without tsx after the build:
//
//   npm run build && node scripts/check-dist-skill-pool.mjs
import { countTokens } from 'gpt-tokenizer';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SkillPool } from '../dist/src/skills/pool.js';
import { STARTED_SLOT_INTS } from '../dist/src/skills/stage.js';
import { TokenThread } from '../dist/src/providers/usage/tokenizer.js';

const dir = await mkdtemp(join(tmpdir(), 'gw-skill-check-'));
const evaluator = join(dir, 'evaluator.mjs');
await writeFile(evaluator, "export const measure = (input) => ({ outcome: 'miss', detail: { bytes: input.body.byteLength, shared: input.body.buffer instanceof SharedArrayBuffer } });\n");
const pool = new SkillPool({ threads: 1, minThreads: 1, maxQueue: 1, idleTimeoutMs: 1000, abortGraceMs: 100 }, [
  { id: 'check', kind: 'guardrail', evaluator: { module: pathToFileURL(evaluator).href, export: 'measure' }, shadowBesideDispatch: true, order: 1 },
]);
try {
  const flagBytes = STARTED_SLOT_INTS * Int32Array.BYTES_PER_ELEMENT;
  const sab = new SharedArrayBuffer(flagBytes + 3);
  new Uint8Array(sab, flagBytes).set([123, 34, 125]);
  const run = await pool.run({ stage: 'check', surface: 'check', acting: true, body: new Uint8Array(sab, flagBytes), started: new Int32Array(sab, 0, STARTED_SLOT_INTS) }, 30_000);
  const ok = run.outcome === 'done' && run.reply.result?.detail?.bytes === 3 && run.reply.result.detail.shared === true;
  process.stdout.write(`${JSON.stringify(run)}\n${ok ? 'ok: the skill pool runs from dist/' : 'FAILED'}\n`);
  // a thread that cannot start rejects here; one that never answers makes the count wait 1 s and count in place, which it says
  const tokens = new TokenThread({ firstTakeMs: 1_000, takeMs: 1_000 });
  await tokens.start();
  const text = 'Hello, world!';
  const counted = tokens.count(text);
  const byThread = !tokens.countingInPlace;
  await tokens.stop();
  const right = countTokens(text, { disallowedSpecial: new Set() });
  const counts = byThread && counted === right;
  process.stdout.write(`${counts ? 'ok: the tokenizer thread runs from dist/' : `FAILED: the tokenizer thread counted ${counted} (gpt-tokenizer: ${right})${byThread ? '' : ', in place: the thread did not answer'}`}\n`);
  process.exitCode = ok && counts ? 0 : 1;
} finally {
  await pool.close();
  await rm(dir, { recursive: true, force: true });
}
