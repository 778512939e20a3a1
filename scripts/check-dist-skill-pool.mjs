// Checks that the compiled skill pool starts its worker from dist/ (worker.js,
// not the tsx shim) and runs a stage there. Plain JavaScript, run without tsx
// after the build:
//
//   npm run build && node scripts/check-dist-skill-pool.mjs
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SkillPool } from '../dist/src/skills/pool.js';

const dir = await mkdtemp(join(tmpdir(), 'gw-skill-check-'));
const evaluator = join(dir, 'evaluator.mjs');
await writeFile(evaluator, "export const measure = (input) => ({ outcome: 'miss', detail: { bytes: input.body.byteLength, shared: input.body.buffer instanceof SharedArrayBuffer } });\n");
const pool = new SkillPool({ threads: 1, minThreads: 1, maxQueue: 1, idleTimeoutMs: 1000, abortGraceMs: 100 }, [
  { id: 'check', kind: 'guardrail', evaluator: { module: pathToFileURL(evaluator).href, export: 'measure' }, shadowBesideDispatch: true, order: 1 },
]);
try {
  const sab = new SharedArrayBuffer(4 + 3);
  new Uint8Array(sab, 4).set([123, 34, 125]);
  const run = await pool.run({ stage: 'check', surface: 'check', acting: true, body: new Uint8Array(sab, 4), started: new Int32Array(sab, 0, 1) }, 30_000);
  const ok = run.outcome === 'done' && run.reply.result?.detail?.bytes === 3 && run.reply.result.detail.shared === true;
  process.stdout.write(`${JSON.stringify(run)}\n${ok ? 'ok: the skill pool runs from dist/' : 'FAILED'}\n`);
  process.exitCode = ok ? 0 : 1;
} finally {
  await pool.close();
  await rm(dir, { recursive: true, force: true });
}
