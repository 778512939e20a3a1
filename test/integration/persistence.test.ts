import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startFakeOpenAI } from '../fakes/openai.js';
import type { FakeVendor } from '../fakes/server.js';
import { ADMIN_KEY, SECRETS_KEY, startTestGateway } from '../helpers/gateway.js';

async function post(url: string, path: string, body: unknown, headers: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const asAdmin = { authorization: `Bearer ${ADMIN_KEY}` };
const chatAs = (url: string, devKey: string) =>
  post(url, '/v1/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${devKey}`, 'x-gw-provider-key': 'sk-upstream-test' });

describe('embedded mode with GW_DATA_DIR survives a restart', () => {
  let fake: FakeVendor;
  let dir: string;
  const env = () => ({ GW_DATA_DIR: dir, GW_SECRETS_KEY: SECRETS_KEY, GW_UPSTREAM_OPENAI: fake.origin });

  before(async () => {
    fake = await startFakeOpenAI();
    dir = await mkdtemp(join(tmpdir(), 'gw-persist-'));
  });
  after(async () => {
    await fake.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('orgs, keys and revocations written before a restart hold after it', async () => {
    const first = await startTestGateway({ env: env() });
    let kept: string;
    let revoked: string;
    try {
      assert.equal((await post(first.url, '/api/v1/admin/orgs', { org_id: 'durable', plan: 'enterprise' }, asAdmin)).status, 201);
      kept = (await post(first.url, '/api/v1/admin/dev_keys', { org_id: 'durable', dev_key_id: 'kept' }, asAdmin)).body['api_key'] as string;
      revoked = (await post(first.url, '/api/v1/admin/dev_keys', { org_id: 'durable', dev_key_id: 'gone' }, asAdmin)).body['api_key'] as string;
      assert.equal((await post(first.url, '/api/v1/admin/dev_keys/revoke', { dev_key_id: 'gone' }, asAdmin)).status, 200);
      assert.equal((await chatAs(first.url, kept)).status, 200);
    } finally {
      await first.close();
    }
    const second = await startTestGateway({ env: env() });
    try {
      assert.equal((await chatAs(second.url, kept)).status, 200);
      assert.equal((await chatAs(second.url, revoked)).status, 401);
      const org = await post(second.url, '/api/v1/admin/orgs', { org_id: 'durable', plan: 'enterprise' }, asAdmin);
      assert.equal(org.status, 200, 'the org is still there, with its fields');
      assert.equal((await post(second.url, '/api/v1/admin/dev_keys', { org_id: 'durable', dev_key_id: 'kept' }, asAdmin)).status, 409);
    } finally {
      await second.close();
    }
  });

  it('stored provider keys, spend caps, access lists, skill flags, modes, locks, params and transitions hold after a restart', async () => {
    const first = await startTestGateway({ env: env() });
    let devKey: string;
    let firstTransition: string;
    try {
      assert.equal((await post(first.url, '/api/v1/admin/orgs', { org_id: 'configured', plan: 'enterprise' }, asAdmin)).status, 201);
      devKey = (await post(first.url, '/api/v1/admin/dev_keys', { org_id: 'configured', dev_key_id: 'dk-configured' }, asAdmin)).body['api_key'] as string;
      const asOrg = { authorization: `Bearer ${devKey}` };
      assert.equal((await post(first.url, '/api/v1/vendor_key/create', { provider: 'openai', api_key: 'sk-stored-durable-9999' }, asOrg)).status, 200);
      assert.equal((await post(first.url, '/api/v1/spend_cap/update', { cap_usd: 12.5, period: 'month' }, asOrg)).status, 200);
      assert.equal((await post(first.url, '/api/v1/model_access/update', { models: ['gpt-4o-mini'] }, asOrg)).status, 200);
      const skills = {
        skills: { pii_redaction: true },
        skill_modes: { semantic_cache: 'shadow' },
        locked_skills: { semantic_cache: true },
        skill_params: { agent_trajectory_compaction: { min_fold_tokens: 2000 } },
      };
      assert.equal((await post(first.url, '/api/v1/dev_key/skills', skills, asOrg)).status, 200);
      const moved = await post(first.url, '/api/v1/tenant/configured/skills/model_routing/lifecycle', { key_id: 'dk-configured', mode: 'canary:25' }, asOrg);
      assert.equal(moved.status, 200);
      firstTransition = (moved.body['transition'] as Record<string, string>)['id'] as string;
    } finally {
      await first.close();
    }

    const second = await startTestGateway({ env: env() });
    try {
      const asOrg = { authorization: `Bearer ${devKey}` };
      const n = fake.received.length;
      const stored = await post(second.url, '/v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, asOrg);
      assert.equal(stored.status, 200, 'the stored provider key opens and is used after the restart');
      assert.equal(fake.received[n]?.headers['authorization'], 'Bearer sk-stored-durable-9999');
      const outOfScope = await post(second.url, '/v1/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, asOrg);
      assert.equal(outOfScope.status, 403, 'the access list holds');

      const settings = await fetch(`${second.url}/api/v1/settings`, { headers: asOrg }).then((r) => r.json() as Promise<Record<string, unknown>>);
      assert.deepEqual(settings['vendor_keys'], [{ provider: 'openai', credential_kind: 'api_key', key_hint: '9999' }]);
      const cap = settings['spend_cap'] as Record<string, unknown>;
      assert.deepEqual([cap['cap_usd'], cap['period']], [12.5, 'month']);
      assert.deepEqual(settings['model_access'], { models: ['gpt-4o-mini'] });
      const [entry] = settings['dev_keys'] as Array<Record<string, unknown>>;
      assert.deepEqual(entry?.['skills'], { pii_redaction: true });
      assert.deepEqual(entry?.['skill_modes'], { semantic_cache: 'shadow', model_routing: 'canary:25' });
      assert.deepEqual(entry?.['locked_skills'], { semantic_cache: true });
      assert.deepEqual(entry?.['skill_params'], { agent_trajectory_compaction: { min_fold_tokens: 2000 } });

      const next = await post(second.url, '/api/v1/tenant/configured/skills/model_routing/lifecycle', { key_id: 'dk-configured', mode: 'prod' }, asOrg);
      const secondTransition = next.body['transition'] as Record<string, string>;
      assert.equal(secondTransition['from_mode'], 'canary:25');
      // the state file is rewritten from the restarted replica's mirror: the first transition is in it only if it was loaded
      const state = JSON.parse(await readFile(join(dir, 'state.json'), 'utf8')) as { transitions: Record<string, { entries: Array<{ id: string; to_mode: string }> }> };
      const log = state.transitions[`${secondTransition['key_id']}:model_routing`]?.entries ?? [];
      assert.deepEqual(
        [log.find((t) => t.id === firstTransition)?.to_mode, log.find((t) => t.id === secondTransition['id'])?.to_mode],
        ['canary:25', 'prod'],
        'the transition recorded before the restart is still held',
      );
    } finally {
      await second.close();
    }
  });

  it('without GW_DATA_DIR nothing survives (the documented embedded default)', async () => {
    const first = await startTestGateway({ env: { GW_UPSTREAM_OPENAI: fake.origin } });
    let devKey: string;
    try {
      await post(first.url, '/api/v1/admin/orgs', { org_id: 'ephemeral' }, asAdmin);
      devKey = (await post(first.url, '/api/v1/admin/dev_keys', { org_id: 'ephemeral' }, asAdmin)).body['api_key'] as string;
      assert.equal((await chatAs(first.url, devKey)).status, 200);
    } finally {
      await first.close();
    }
    const second = await startTestGateway({ env: { GW_UPSTREAM_OPENAI: fake.origin } });
    try {
      assert.equal((await chatAs(second.url, devKey)).status, 401);
    } finally {
      await second.close();
    }
  });

  it('a corrupt state file stops start-up with a message naming GW_DATA_DIR', async () => {
    const bad = await mkdtemp(join(tmpdir(), 'gw-corrupt-'));
    after(() => rm(bad, { recursive: true, force: true }));
    await writeFile(join(bad, 'state.json'), '{"orgs":{"durable":');
    await assert.rejects(startTestGateway({ env: { GW_DATA_DIR: bad, GW_SECRETS_KEY: SECRETS_KEY } }), /GW_DATA_DIR: .*state\.json is not valid JSON/);
  });
});

describe('a start-up that fails part-way lets go of what it had started', () => {
  it('releases the data directory, so the next start on it succeeds', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gw-partial-'));
    after(() => rm(dir, { recursive: true, force: true }));
    const env = { GW_DATA_DIR: dir, GW_SECRETS_KEY: SECRETS_KEY };
    // the store starts and takes the directory's lock; the IdP key set, read later, is missing
    await assert.rejects(startTestGateway({ env: { ...env, GW_IDP_ISSUER: 'https://idp.example', GW_IDP_JWKS: join(dir, 'missing-jwks.json') } }));
    await assert.rejects(readFile(join(dir, 'state.lock'), 'utf8'), { code: 'ENOENT' }, 'the data directory is still locked');
    const gw = await startTestGateway({ env });
    await gw.close();
  });
});
