import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { redisKeys } from '../../src/stores/redis/prefixes.js';
import { startFakeOpenAI } from '../fakes/openai.js';
import type { FakeVendor } from '../fakes/server.js';
import { ADMIN_KEY, dropRedisPrefix, keysMatching, newRedisPrefix, SECRETS_KEY, testRedis, startTestGateway, type Bootstrap, type TestGateway, type TestGatewayOptions } from '../helpers/gateway.js';

interface Reply {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

async function post(url: string, path: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${ADMIN_KEY}` }): Promise<Reply> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

const errorOf = (r: Reply) => r.body['error'] as { type: string; message: string; field?: string };

/** A chat completion with a developer key: the status says whether the key is accepted. */
async function callWith(url: string, devKey: string): Promise<number> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${devKey}`, 'x-gw-provider-key': 'sk-upstream-test' },
    body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

/** One deployment under test: the same options start it again (a restart, or a second replica). */
interface Deployment {
  name: string;
  options(extra?: TestGatewayOptions): TestGatewayOptions;
  /** the deployment's stored config documents, to look for secrets and compare runs */
  dump(): Promise<string>;
  cleanup(): Promise<void>;
}

async function redisDeployment(): Promise<Deployment> {
  const prefix = newRedisPrefix();
  return {
    name: 'redis',
    options: (extra = {}) => ({ ...extra, redisPrefix: prefix }),
    async dump() {
      const r = testRedis();
      try {
        const keys = (await keysMatching(r, redisKeys(prefix).doc('*'))).sort();
        const parts = await Promise.all(keys.map(async (k) => JSON.stringify(await r.hgetall(k))));
        return parts.join('\n');
      } finally {
        r.disconnect();
      }
    },
    cleanup: () => dropRedisPrefix(prefix),
  };
}

async function embeddedDeployment(): Promise<Deployment> {
  const dir = await mkdtemp(join(tmpdir(), 'gw-admin-'));
  return {
    name: 'embedded with GW_DATA_DIR',
    options: (extra = {}) => ({ ...extra, env: { GW_DATA_DIR: dir, GW_SECRETS_KEY: SECRETS_KEY, ...extra.env } }),
    dump: () => readFile(join(dir, 'state.json'), 'utf8'),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

let fake: FakeVendor;
before(async () => {
  fake = await startFakeOpenAI();
});
after(() => fake.close());

for (const makeDeployment of [redisDeployment, embeddedDeployment]) {
  describe('admin routes and GW_BOOTSTRAP', async () => {
    const deployment = await makeDeployment();
    after(() => deployment.cleanup());

    describe(deployment.name, () => {
      let gw: TestGateway;
      before(async () => {
        gw = await startTestGateway(deployment.options({ env: { GW_UPSTREAM_OPENAI: fake.origin } }));
      });
      after(() => gw.close());

      it('refuses anything but the admin key with 403 invalid_admin_key', async () => {
        await post(gw.url, '/api/v1/admin/orgs', { org_id: 'keyholder' });
        const { body } = await post(gw.url, '/api/v1/admin/dev_keys', { org_id: 'keyholder' });
        const devKey = body['api_key'] as string;
        const presented: Array<Record<string, string>> = [{}, { authorization: `Bearer ${devKey}` }, { 'x-gw-key': devKey }, { authorization: 'Bearer wrong-admin-key-0123456789' }, { 'x-gw-admin-key': `${ADMIN_KEY}x` }, { authorization: ADMIN_KEY }];
        for (const headers of presented) {
          const r = await post(gw.url, '/api/v1/admin/orgs', { org_id: 'intruder' }, headers);
          assert.equal(r.status, 403, JSON.stringify(headers));
          assert.equal(errorOf(r).type, 'invalid_admin_key');
          assert.equal(r.headers.get('x-gw-error'), 'invalid_admin_key');
        }
        const viaHeader = await post(gw.url, '/api/v1/admin/orgs', { org_id: 'via-header' }, { 'x-gw-admin-key': ADMIN_KEY });
        assert.equal(viaHeader.status, 201);
      });

      it('creates an org (201), repeats it (200), refuses a different one (409)', async () => {
        const created = await post(gw.url, '/api/v1/admin/orgs', { org_id: 'globex', plan: 'enterprise', rps_cap: 500 });
        assert.equal(created.status, 201);
        assert.deepEqual({ ...created.body, created_at: undefined }, { org_id: 'globex', parent_org_id: null, plan: 'enterprise', rps_cap: 500, created_at: undefined });
        const again = await post(gw.url, '/api/v1/admin/orgs', { org_id: 'globex', plan: 'enterprise', rps_cap: 500 });
        assert.equal(again.status, 200);
        assert.deepEqual(again.body, created.body);
        const different = await post(gw.url, '/api/v1/admin/orgs', { org_id: 'globex', plan: 'team', rps_cap: 500 });
        assert.equal(different.status, 409);
        assert.equal(errorOf(different).type, 'conflict');
        const defaults = await post(gw.url, '/api/v1/admin/orgs', { org_id: 'initech' });
        assert.equal(defaults.body['plan'], 'team');
        assert.equal(defaults.body['rps_cap'], 50);
        const sub = await post(gw.url, '/api/v1/admin/orgs', { org_id: 'globex-labs', parent_org_id: 'globex' });
        assert.equal(sub.status, 201);
        assert.equal(sub.body['parent_org_id'], 'globex');
      });

      it('answers 400 request_error naming the field', async () => {
        const cases: Array<[string, unknown, string]> = [
          ['/api/v1/admin/orgs', { org_id: 'Bad Org!' }, 'org_id'],
          ['/api/v1/admin/orgs', { org_id: 'ok', plan: 'platinum' }, 'plan'],
          ['/api/v1/admin/orgs', { org_id: 'ok', rps_cap: 0 }, 'rps_cap'],
          ['/api/v1/admin/orgs', { org_id: 'ok', colour: 'red' }, 'colour'],
          ['/api/v1/admin/orgs', { org_id: 'orphan', parent_org_id: 'no-such-parent' }, 'parent_org_id'],
          ['/api/v1/admin/orgs', { org_id: 'globex', parent_org_id: 'globex-labs' }, 'parent_org_id'],
          ['/api/v1/admin/dev_keys', { org_id: 'no-such-org' }, 'org_id'],
          ['/api/v1/admin/dev_keys', { org_id: 'globex', expires_at: 'tomorrow' }, 'expires_at'],
          ['/api/v1/admin/dev_keys/revoke', {}, 'key_id'],
        ];
        for (const [path, body, field] of cases) {
          const r = await post(gw.url, path, body);
          assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}`);
          assert.equal(errorOf(r).type, 'request_error');
          assert.match(errorOf(r).message, new RegExp(field), `${path} ${JSON.stringify(body)}: ${errorOf(r).message}`);
        }
        const notJson = await post(gw.url, '/api/v1/admin/orgs', '{"org_id":');
        assert.equal(notJson.status, 400);
      });

      it('mints a developer key that works at once; only its hash is stored', async () => {
        const r = await post(gw.url, '/api/v1/admin/dev_keys', { org_id: 'globex', name: 'ci' });
        assert.equal(r.status, 201);
        assert.deepEqual(Object.keys(r.body).sort(), ['api_key', 'dev_key_id', 'key_id', 'org_id']);
        assert.match(r.body['key_id'] as string, /^key_[a-z2-7]{20}$/);
        assert.match(r.body['api_key'] as string, /^gw_[0-9A-Za-z]{40}$/);
        assert.equal(r.body['dev_key_id'], r.body['key_id']);
        assert.equal(r.body['org_id'], 'globex');
        assert.equal(await callWith(gw.url, r.body['api_key'] as string), 200);
        const stored = await deployment.dump();
        assert.ok(stored.includes(r.body['key_id'] as string), 'the key is stored');
        assert.ok(!stored.includes(r.body['api_key'] as string), 'the secret is not');
      });

      it('takes a caller-chosen dev_key_id and refuses it twice (409)', async () => {
        const r = await post(gw.url, '/api/v1/admin/dev_keys', { org_id: 'globex', dev_key_id: 'console-key-7' });
        assert.equal(r.status, 201);
        assert.equal(r.body['dev_key_id'], 'console-key-7');
        assert.notEqual(r.body['key_id'], 'console-key-7');
        const twice = await post(gw.url, '/api/v1/admin/dev_keys', { org_id: 'globex', dev_key_id: 'console-key-7' });
        assert.equal(twice.status, 409);
      });

      it('honours expires_at', async () => {
        const past = await post(gw.url, '/api/v1/admin/dev_keys', { org_id: 'globex', expires_at: new Date(Date.now() - 1000).toISOString() });
        assert.equal(past.status, 201);
        assert.equal(await callWith(gw.url, past.body['api_key'] as string), 401);
        // wide enough that creating the key and one call fit before it on a loaded machine
        const soon = await post(gw.url, '/api/v1/admin/dev_keys', { org_id: 'globex', expires_at: new Date(Date.now() + 3000).toISOString() });
        assert.equal(await callWith(gw.url, soon.body['api_key'] as string), 200);
        await new Promise((r) => setTimeout(r, 3100));
        assert.equal(await callWith(gw.url, soon.body['api_key'] as string), 401);
      });

      it('revokes by key_id or dev_key_id: 401 from the next request on', async () => {
        const a = await post(gw.url, '/api/v1/admin/dev_keys', { org_id: 'globex' });
        const b = await post(gw.url, '/api/v1/admin/dev_keys', { org_id: 'globex', dev_key_id: 'console-key-9' });
        assert.equal(await callWith(gw.url, a.body['api_key'] as string), 200);
        const ra = await post(gw.url, '/api/v1/admin/dev_keys/revoke', { key_id: a.body['key_id'] });
        assert.equal(ra.status, 200);
        assert.equal(ra.body['key_id'], a.body['key_id']);
        assert.equal(await callWith(gw.url, a.body['api_key'] as string), 401);
        const rb = await post(gw.url, '/api/v1/admin/dev_keys/revoke', { dev_key_id: 'console-key-9' });
        assert.equal(rb.status, 200);
        assert.equal(await callWith(gw.url, b.body['api_key'] as string), 401);
        assert.equal((await post(gw.url, '/api/v1/admin/dev_keys/revoke', { key_id: a.body['key_id'] })).status, 200, 'revoking twice is harmless');
        assert.equal((await post(gw.url, '/api/v1/admin/dev_keys/revoke', { key_id: 'key_aaaaaaaaaaaaaaaaaaaa' })).status, 404);
      });
    });

    describe(`${deployment.name}: GW_BOOTSTRAP`, () => {
      const fileSecret = 'gw_' + 'B'.repeat(20) + '0123456789abcdefghij';
      const subSecret = 'gw_' + 'C'.repeat(20) + '0123456789abcdefghij';
      // the sub-tenant is listed before its parent on purpose
      const bootstrap: Bootstrap = {
        orgs: [{ org_id: 'boot-child', parent_org_id: 'boot-parent', plan: 'free' }, { org_id: 'boot-parent', plan: 'enterprise', rps_cap: 900 }],
        dev_keys: [
          { org_id: 'boot-parent', dev_key_id: 'boot-key', api_key: fileSecret },
          { org_id: 'boot-child', key_id: 'key_bbbbbbbbbbbbbbbbbbbb', api_key: subSecret },
        ],
      };

      it('applies parents before sub-tenants, and a second start changes nothing', async () => {
        const first = await startTestGateway(deployment.options({ bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin } }));
        try {
          assert.equal(await callWith(first.url, fileSecret), 200);
          assert.equal(await callWith(first.url, subSecret), 200);
          assert.ok(first.logs.some((l) => l.includes('"msg":"bootstrap applied"') && l.includes('"orgs":2') && l.includes('"keys":2')));
        } finally {
          await first.close();
        }
        const before = await deployment.dump();
        const second = await startTestGateway(deployment.options({ bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin } }));
        try {
          assert.ok(second.logs.some((l) => l.includes('"msg":"bootstrap applied"') && l.includes('"orgs":0') && l.includes('"keys":0')));
          assert.equal(await callWith(second.url, fileSecret), 200);
          const orgAgain = await post(second.url, '/api/v1/admin/orgs', { org_id: 'boot-parent', plan: 'enterprise', rps_cap: 900 });
          assert.equal(orgAgain.status, 200);
          assert.equal(orgAgain.body['parent_org_id'], null);
        } finally {
          await second.close();
        }
        assert.equal(await deployment.dump(), before, 'the second run wrote nothing');
        assert.equal(before.split('boot-key').length - 1, 1, 'one key, not a duplicate');
      });

      it('a key revoked after bootstrap stays revoked when bootstrap runs again', async () => {
        const gw = await startTestGateway(deployment.options({ bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin } }));
        try {
          assert.equal((await post(gw.url, '/api/v1/admin/dev_keys/revoke', { dev_key_id: 'boot-key' })).status, 200);
        } finally {
          await gw.close();
        }
        const again = await startTestGateway(deployment.options({ bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin } }));
        try {
          assert.equal(await callWith(again.url, fileSecret), 401);
        } finally {
          await again.close();
        }
      });

      it('a bad file stops start-up with a message naming GW_BOOTSTRAP', async () => {
        const dir = await mkdtemp(join(tmpdir(), 'gw-badboot-'));
        after(() => rm(dir, { recursive: true, force: true }));
        const cases: Array<[string, RegExp]> = [
          ['{"orgs": [', /not valid JSON|Unexpected end/],
          [JSON.stringify({ orgs: [{ org_id: 'UPPER' }] }), /GW_BOOTSTRAP\.orgs\.0\.org_id/],
          [JSON.stringify({ dev_keys: [{ org_id: 'nobody', api_key: 'gw_' + 'D'.repeat(40) }] }), /org_id: org nobody does not exist/],
          [JSON.stringify({ orgs: [{ org_id: 'loop-a', parent_org_id: 'loop-b' }, { org_id: 'loop-b', parent_org_id: 'loop-a' }] }), /parent_org_id/],
          [JSON.stringify({ dev_keys: [{ org_id: 'boot-child', api_key: fileSecret }] }), /already belongs to key/],
        ];
        for (const [i, [text, why]] of cases.entries()) {
          const file = join(dir, `bad-${i}.json`);
          await writeFile(file, text);
          await assert.rejects(startTestGateway(deployment.options({ env: { GW_BOOTSTRAP: file } })), (err: Error) => err.message.startsWith(`GW_BOOTSTRAP: cannot apply ${file}`) && why.test(err.message), text);
        }
        await assert.rejects(startTestGateway(deployment.options({ env: { GW_BOOTSTRAP: join(dir, 'missing.json') } })), /GW_BOOTSTRAP: cannot apply .*ENOENT/);
      });
    });
  });
}

describe('admin routes without GW_ADMIN_KEY', () => {
  it('answer 403 invalid_admin_key whatever is presented', async () => {
    const gw = await startTestGateway({ env: { GW_ADMIN_KEY: '' } });
    after(() => gw.close());
    const presented: Array<Record<string, string>> = [{}, { authorization: `Bearer ${ADMIN_KEY}` }, { 'x-gw-admin-key': '' }];
    for (const headers of presented) {
      const r = await post(gw.url, '/api/v1/admin/orgs', { org_id: 'nope' }, headers);
      assert.equal(r.status, 403);
      assert.equal(errorOf(r).type, 'invalid_admin_key');
    }
  });
});
