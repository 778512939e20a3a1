import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
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
