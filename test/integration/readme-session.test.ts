import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { spawnGateway, stopGateway, type GatewayProcess } from '../helpers/gateway-process.js';

/**
 * README.md says every example in it was run against the gateway its Quick
 * start starts. This test does what a new reader does: it starts the fake
 * vendors and the gateway with the bootstrap file and settings the README
 * gives, then runs the README's first session, command by command, with
 * curl, and its SDK snippets with the SDKs, and expects every call to succeed.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const run = promisify(execFile);

/** The text of the first fenced block after `marker`. */
function blockAfter(marker: string): string {
  const at = README.indexOf(marker);
  assert.ok(at >= 0, `README.md no longer has "${marker}"`);
  const open = README.indexOf('```', at);
  const start = README.indexOf('\n', open) + 1;
  return README.slice(start, README.indexOf('\n```', start));
}

/** `NAME=value` pairs as a shell line assigns them. */
const assignments = (text: string, name: RegExp): Record<string, string> => Object.fromEntries([...text.matchAll(new RegExp(`\\b(${name.source})=(\\S+)`, 'g'))].map((m) => [m[1]!, m[2]!]));

/** Each command of a shell block, its continuation lines joined; comments left out. */
const commands = (block: string): string[] =>
  block
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.trimStart().startsWith('#'));

/** Starts scripts/fake-vendors.ts as the README does; resolves with the GW_UPSTREAM_* settings it prints. */
async function startFakes(): Promise<{ env: Record<string, string>; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts/fake-vendors.ts')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    await once(child, 'exit');
  };
  const env: Record<string, string> = {};
  for await (const line of createInterface({ input: child.stdout })) {
    const m = /^export (GW_UPSTREAM_\w+)=(\S+)$/.exec(line);
    if (m) env[m[1]!] = m[2]!;
    if (line.startsWith('# cloudy access-key pair')) break;
  }
  assert.ok(Object.keys(env).length >= 5, `the fakes printed ${JSON.stringify(env)}`);
  return { env, stop };
}

describe('README.md, as a new reader runs it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-readme-'));
  let fakes: Awaited<ReturnType<typeof startFakes>> | undefined;
  let gw: GatewayProcess | undefined;
  /** the shell variables the examples assume, GW pointing at this gateway */
  let shell: Record<string, string> = {};

  before(async () => {
    const bootstrap = join(dir, 'bootstrap.json');
    const heredoc = /cat > bootstrap\.json <<'EOF'\n([\s\S]*?)\nEOF/.exec(README);
    assert.ok(heredoc, 'README.md no longer writes bootstrap.json');
    writeFileSync(bootstrap, heredoc[1]!);
    const settings = assignments(blockAfter('Against local fakes of every vendor'), /GW_[A-Z_]+/);
    assert.ok(settings['GW_ADMIN_KEY'] && settings['GW_BOOTSTRAP'], `the Quick start command sets ${Object.keys(settings).join(', ')}`);
    fakes = await startFakes();
    gw = await spawnGateway({ ...settings, ...fakes.env, GW_BOOTSTRAP: bootstrap, GW_PORT: '0' });
    shell = { ...assignments(blockAfter('The examples below assume'), /GW|GW_KEY|ADMIN/), GW: `http://127.0.0.1:${gw.port}` };
  });
  after(async () => {
    if (gw) await stopGateway(gw);
    await fakes?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('every call of the first session succeeds against the gateway of Quick start and the fake vendors', async () => {
    const session = commands(blockAfter('A first session against the gateway of Quick start'));
    assert.ok(session.length >= 5, `the first session has ${session.length} commands`);
    // curl prints the status after the body; every call of the session is meant to work
    const wrapper = `curl() { command curl -sS -w '\\n%{http_code}' "$@"; }\n`;
    for (const command of session) {
      const { stdout } = await run('bash', ['-c', wrapper + command], { env: { ...process.env, ...shell }, timeout: 20_000 });
      const status = Number(stdout.slice(stdout.lastIndexOf('\n') + 1));
      assert.ok(status >= 200 && status < 300, `${command}\n→ ${status}: ${stdout.slice(0, 400)}`);
    }
  });

  it('every SDK snippet runs against that gateway with the vendors\' own SDKs', async () => {
    const sdks = README.slice(README.indexOf('## SDKs'), README.indexOf('\n## ', README.indexOf('## SDKs') + 1));
    const snippets = [...sdks.matchAll(/```ts\n([\s\S]*?)\n```/g)].map((m) => m[1]!);
    assert.ok(snippets.length >= 4, `the SDKs section has ${snippets.length} snippets`);
    // the snippets name their credentials; these reach the fakes (the Bedrock fake checks the pair's SigV4)
    const credentials = `const GW_KEY = '${shell['GW_KEY']}', OPENAI_KEY = 'sk-openai', AZURE_KEY = 'azure-key', ANTHROPIC_KEY = 'sk-ant', GEMINI_KEY = 'AIza-key', BEDROCK_CREDENTIAL = 'AKIAIOSFODNN7EXAMPLE:wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';\n`;
    // inside the repository, so the SDKs resolve from its node_modules
    const work = mkdtempSync(join(ROOT, 'test', '.readme-sdk-'));
    try {
      for (const [i, snippet] of snippets.entries()) {
        const lines = snippet.replaceAll('http://localhost:8089', shell['GW']!).split('\n');
        const file = join(work, `snippet-${i}.ts`);
        writeFileSync(file, [...lines.filter((l) => l.startsWith('import ')), credentials, ...lines.filter((l) => !l.startsWith('import ')), 'export {};'].join('\n'));
        await run(process.execPath, ['--import', 'tsx', file], { cwd: ROOT, timeout: 60_000 }).catch((err: { stderr?: string }) => assert.fail(`snippet ${i + 1} of the SDKs section failed:\n${snippet}\n→ ${err.stderr?.slice(0, 800)}`));
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
