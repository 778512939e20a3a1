import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { spawnGateway, stopGateway } from '../helpers/gateway-process.js';

/**
 * README.md says every example in it was run against the gateway its Quick
 * start starts. This test does what a new reader does: it starts the fake
 * vendors and the gateway with the bootstrap file and settings the README
 * gives, then runs the README's first session, command by command, with
 * curl, and expects every call to succeed.
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
  it('every call of the first session succeeds against the gateway of Quick start and the fake vendors', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-readme-'));
    const bootstrap = join(dir, 'bootstrap.json');
    const heredoc = /cat > bootstrap\.json <<'EOF'\n([\s\S]*?)\nEOF/.exec(README);
    assert.ok(heredoc, 'README.md no longer writes bootstrap.json');
    writeFileSync(bootstrap, heredoc[1]!);
    const settings = assignments(blockAfter('Against local fakes of every vendor'), /GW_[A-Z_]+/);
    assert.ok(settings['GW_ADMIN_KEY'] && settings['GW_BOOTSTRAP'], `the Quick start command sets ${Object.keys(settings).join(', ')}`);
    const fakes = await startFakes();
    try {
      const gw = await spawnGateway({ ...settings, ...fakes.env, GW_BOOTSTRAP: bootstrap, GW_PORT: '0' });
      try {
        const shell = { ...assignments(blockAfter('The examples below assume'), /GW|GW_KEY|ADMIN/), GW: `http://127.0.0.1:${gw.port}` };
        const session = commands(blockAfter('A first session against the gateway of Quick start'));
        assert.ok(session.length >= 5, `the first session has ${session.length} commands`);
        // curl prints the status after the body; every call of the session is meant to work
        const wrapper = `curl() { command curl -sS -w '\\n%{http_code}' "$@"; }\n`;
        for (const command of session) {
          const { stdout } = await run('bash', ['-c', wrapper + command], { env: { ...process.env, ...shell }, timeout: 20_000 });
          const status = Number(stdout.slice(stdout.lastIndexOf('\n') + 1));
          assert.ok(status >= 200 && status < 300, `${command}\n→ ${status}: ${stdout.slice(0, 400)}`);
        }
      } finally {
        await stopGateway(gw);
      }
    } finally {
      await fakes.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
