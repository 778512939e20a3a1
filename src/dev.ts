/**
 * GW_DEV=1: a gateway that works on a machine with no vendor account. The
 * bundled fake vendors (scripts/fake-vendors.ts, run through tsx from the
 * repository's dev dependencies) stand in for every provider, and a demo org
 * with one developer key is bootstrapped and printed once. Never the default.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { newDevKeySecret } from './tenancy/secrets.js';

const FAKES_SCRIPT = join('scripts', 'fake-vendors.ts');
export const DEMO_ORG = 'demo';
/** providers whose demo credential is a plain API key, stored for the demo org once the gateway listens */
const DEMO_STORED_PROVIDERS = ['openai', 'msgvendor', 'genvendor'] as const;

export interface DevEnvironment {
  /** GW_ variables to run the gateway with: the fakes' origins, the demo bootstrap, an admin key */
  env: Record<string, string>;
  /** the demo org's developer key */
  apiKey: string;
  adminKey: string;
  /** stops the fake vendors and removes the demo bootstrap file */
  stop(): void;
}

/** The repository root: the nearest directory above this module holding the fakes script (src/ and dist/src/ alike). */
function repositoryRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, FAKES_SCRIPT))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`GW_DEV: ${FAKES_SCRIPT} not found above ${dirname(fileURLToPath(import.meta.url))}: dev mode runs from a clone of the repository`);
    dir = up;
  }
  return dir;
}

/** Starts the fakes script and reads the `export GW_UPSTREAM_…=origin` lines it prints once they all listen. */
function startFakes(root: string): Promise<{ child: ChildProcess; origins: Record<string, string> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', FAKES_SCRIPT], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const origins: Record<string, string> = {};
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`GW_DEV: the fake vendors exited (${code}) before listening; is tsx installed (npm ci)?`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const m = /^export (GW_UPSTREAM_\w+)=(\S+)$/.exec(line);
      if (m) origins[m[1] as string] = m[2] as string;
      // the script's last line follows every origin
      else if (line.startsWith('#')) resolve({ child, origins });
    });
  });
}

/** Starts the fake vendors and writes the demo bootstrap; `adminKey` is kept when the operator set one. */
export async function startDevEnvironment(adminKey: string | undefined): Promise<DevEnvironment> {
  const { child, origins } = await startFakes(repositoryRoot());
  const apiKey = newDevKeySecret();
  const dir = await mkdtemp(join(tmpdir(), 'gw-dev-'));
  const file = join(dir, 'bootstrap.json');
  await writeFile(file, JSON.stringify({ orgs: [{ org_id: DEMO_ORG }], dev_keys: [{ org_id: DEMO_ORG, dev_key_id: 'dk-demo', name: 'GW_DEV demo key', api_key: apiKey }] }));
  const admin = adminKey ?? randomBytes(24).toString('hex');
  return {
    env: { ...origins, GW_BOOTSTRAP: file, GW_ADMIN_KEY: admin },
    apiKey,
    adminKey: admin,
    stop: () => {
      child.kill('SIGTERM');
      // the demo bootstrap holds a developer key: nothing of it outlives the process
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Stores a demo provider key for each plain-key provider through the gateway's own route, so calls need no vendor header. */
export async function storeDemoProviderKeys(gatewayUrl: string, apiKey: string): Promise<void> {
  for (const provider of DEMO_STORED_PROVIDERS) {
    const res = await fetch(`${gatewayUrl}/api/v1/vendor_key/create`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ provider, api_key: `demo-${provider}-key` }),
    });
    if (!res.ok) throw new Error(`GW_DEV: storing the demo ${provider} key answered ${res.status}: ${await res.text()}`);
  }
}

/** The once-printed dev-mode banner: what runs where, one call to try and the console; the admin CLI line comes last. */
export function devBanner(gatewayUrl: string, dev: DevEnvironment): string {
  return [
    `GW_DEV=1: demo gateway on ${gatewayUrl}, every provider answered by a local fake vendor (never use this mode in production)`,
    `  demo org: ${DEMO_ORG}   developer key: ${dev.apiKey}   admin key: ${dev.adminKey}`,
    `  try: curl -s ${gatewayUrl}/v1/chat/completions -H 'authorization: Bearer ${dev.apiKey}' -H 'content-type: application/json' -d '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}'`,
    `  console: ${gatewayUrl}/console (sign in with the developer key)`,
    `  admin CLI: GW_URL=${gatewayUrl} GW_ADMIN_KEY=${dev.adminKey} npm run admin -- orgs list`,
  ].join('\n');
}
