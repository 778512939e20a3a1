import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ADMIN_KEY, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The CLI as a user runs it (`npm run admin --` is this command line), in its own process. */
function gw(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    // only what the test names: no GW_ variable of the runner's environment leaks in
    const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GW_')));
    execFile(process.execPath, ['--import', 'tsx', 'scripts/gw.ts', ...args], { cwd: ROOT, env: { ...base, ...env } }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

/** A loopback port nothing listens on: bound, then let go. */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

const deployments: Array<{ name: string; redis: boolean }> = [
  { name: 'embedded', redis: false },
  { name: 'redis', redis: true },
];

for (const { name, redis } of deployments) {
  describe(`gw, the admin CLI, against a ${name} gateway`, () => {
    let gateway: TestGateway;
    let admin: Record<string, string>;
    before(async () => {
      gateway = await startTestGateway({ redis });
      admin = { GW_URL: gateway.url, GW_ADMIN_KEY: ADMIN_KEY };
    });
    after(() => gateway.close());

    it('creates and lists orgs and keys, stores a provider key, sets cap and access, revokes the key; every change is an audit line without secrets', async () => {
      const org = await gw(['orgs', 'create', 'acme', '--plan', 'enterprise', '--rps-cap', '500'], admin);
      assert.equal(org.code, 0, org.stderr);
      assert.match(org.stdout, /^ORG_ID\s+PARENT_ORG_ID\s+PLAN\s+RPS_CAP/);
      assert.match(org.stdout, /\nacme\s+-\s+enterprise\s+500\s/);

      const orgs = JSON.parse((await gw(['orgs', 'list', '--json'], admin)).stdout) as { data: Array<{ org_id: string; plan: string }> };
      assert.deepEqual(orgs.data.map((o) => [o.org_id, o.plan]), [['acme', 'enterprise']]);

      const created = await gw(['keys', 'create', 'acme', '--dev-key-id', 'dk-cli', '--name', 'ci key', '--json'], admin);
      assert.equal(created.code, 0, created.stderr);
      const key = JSON.parse(created.stdout) as { key_id: string; api_key: string };
      assert.match(key.api_key, /^gw_[0-9A-Za-z]{40}$/);

      const listed = await gw(['keys', 'list', 'acme'], admin);
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, new RegExp(`${key.key_id}\\s+dk-cli\\s+ci key\\s`));
      assert.ok(!listed.stdout.includes(key.api_key), 'the key list shows no secret');
      const listedJson = await gw(['keys', 'list', 'acme', '--json'], admin);
      assert.ok(!listedJson.stdout.includes('secret_hash'), 'the key list carries no hash');

      const tenant = { GW_URL: gateway.url, GW_KEY: key.api_key };
      const stored = await gw(['provider-keys', 'set', 'openai', '--api-key', 'sk-cli-secret-9876'], tenant);
      assert.equal(stored.code, 0, stored.stderr);
      assert.match(stored.stdout, /openai\s+9876/);
      const cap = await gw(['spend-cap', 'set', '25', '--period', 'day'], tenant);
      assert.equal(cap.code, 0, cap.stderr);
      assert.match(cap.stdout, /\n25\s+day\s/);
      assert.equal((await gw(['model-access', 'set', 'gpt-4o,gpt-4o-mini'], tenant)).stdout, 'model access: gpt-4o, gpt-4o-mini\n');

      const settings = await gw(['settings'], tenant);
      assert.equal(settings.code, 0, settings.stderr);
      assert.match(settings.stdout, /spend cap: 25 USD per day/);
      assert.match(settings.stdout, /model access: gpt-4o, gpt-4o-mini/);
      assert.match(settings.stdout, /openai\s+9876/);
      assert.ok(!settings.stdout.includes('sk-cli-secret'), 'settings show the provider key only as a hint');

      const deleted = await gw(['provider-keys', 'delete', 'openai'], tenant);
      assert.match(deleted.stdout, /openai\s+true/);

      const revoked = await gw(['keys', 'revoke', 'dk-cli'], admin);
      assert.equal(revoked.code, 0, revoked.stderr);
      assert.match(revoked.stdout, new RegExp(`${key.key_id}\\s+dk-cli\\s+\\d{4}-`));
      // the revoked key no longer opens the org's settings
      const refused = await gw(['settings'], tenant);
      assert.equal(refused.code, 4);
      assert.match(refused.stderr, /HTTP 401 /);

      const audit = gateway.logs.filter((l) => l.includes('"admin change"')).map((l) => (JSON.parse(l) as { audit: Record<string, string> }).audit);
      assert.deepEqual(
        audit.map((a) => [a['actor'], a['action'], a['org_id']]),
        [
          ['admin_key', 'org.create', 'acme'],
          ['admin_key', 'dev_key.create', 'acme'],
          ['admin_key', 'dev_key.revoke', 'acme'],
        ],
      );
      assert.ok(audit.every((a) => !Number.isNaN(Date.parse(a['at'] ?? ''))), 'each audit line says when');
      const logText = gateway.logs.join('\n');
      assert.ok(!logText.includes(key.api_key) && !logText.includes('sk-cli-secret') && !logText.includes(ADMIN_KEY), 'no secret in any log line');
    });

    it(`reads usage over /api/v1/usage ${redis ? 'as a table' : 'and names the refusal without a durable store'}`, async () => {
      await gw(['orgs', 'create', 'usage-org'], admin);
      const key = JSON.parse((await gw(['keys', 'create', 'usage-org', '--json'], admin)).stdout) as { api_key: string };
      const usage = await gw(['usage', '--window', '1h', '--group-by', 'provider,model'], { GW_URL: gateway.url, GW_KEY: key.api_key });
      if (redis) {
        assert.equal(usage.code, 0, usage.stderr);
        assert.match(usage.stdout, /^window 1h, source /);
      } else {
        assert.equal(usage.code, 4);
        assert.match(usage.stderr, /^gw usage: GET \/api\/v1\/usage: HTTP \d{3} \w+: /);
      }
    });
  });
}

describe('gw names what was wrong', () => {
  let gateway: TestGateway;
  let admin: Record<string, string>;
  before(async () => {
    gateway = await startTestGateway();
    admin = { GW_URL: gateway.url, GW_ADMIN_KEY: ADMIN_KEY };
  });
  after(() => gateway.close());

  it('names what was wrong: a bad flag, a missing argument or credential, the gateway refusing, an unreachable gateway', async () => {
    const badFlag = await gw(['orgs', 'list', '--colour'], admin);
    assert.equal(badFlag.code, 2);
    assert.match(badFlag.stderr, /'--colour'/);

    const family = await gw(['orgs'], admin);
    assert.equal(family.code, 2);
    assert.match(family.stderr, /unknown command: orgs; orgs takes: list, create /);
    const unknown = await gw(['bogus'], admin);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /^gw: unknown command: bogus \(gw help lists the commands\)$/m);

    const missing = await gw(['keys', 'create'], admin);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /missing <org_id>/);

    const noKey = await gw(['orgs', 'list'], { GW_URL: gateway.url });
    assert.equal(noKey.code, 2);
    assert.match(noKey.stderr, /GW_ADMIN_KEY/);

    const wrongKey = await gw(['orgs', 'list', '--admin-key', 'not-the-admin-key'], { GW_URL: gateway.url });
    assert.equal(wrongKey.code, 4);
    assert.match(wrongKey.stderr, /HTTP 403 invalid_admin_key: /);

    const invalid = await gw(['orgs', 'create', 'Bad Org'], admin);
    assert.equal(invalid.code, 4);
    assert.match(invalid.stderr, /HTTP 400 request_error: .*org_id/);

    const unknownOrg = await gw(['keys', 'list', 'nobody'], admin);
    assert.equal(unknownOrg.code, 4);
    assert.match(unknownOrg.stderr, /HTTP 404 not_found: no org nobody/);

    const unreachable = await gw(['orgs', 'list', '--url', `http://127.0.0.1:${await closedPort()}`], admin);
    assert.equal(unreachable.code, 3);
    assert.match(unreachable.stderr, /cannot reach the gateway at http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED/);
  });
});

describe('gw secrets-key', () => {
  it('prints a fresh GW_SECRETS_KEY the gateway accepts (32 bytes, base64), without a gateway', async () => {
    const first = await gw(['secrets-key']);
    const second = await gw(['secrets-key']);
    assert.equal(first.code, 0);
    assert.match(first.stdout, /^GW_SECRETS_KEY=[A-Za-z0-9+/]{43}=\n$/);
    assert.notEqual(first.stdout, second.stdout);
  });
});
