import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startFakeOpenAI } from '../fakes/openai.js';
import type { FakeVendor } from '../fakes/server.js';
import { call } from '../helpers/api.js';
import { SECRETS_KEY, oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { scratchDir } from '../helpers/scratch.js';

/**
 * A request's own log lines: the fault here is real (a corrupt model-access
 * document makes the policy stage throw), so the request logs why it was
 * relayed directly, and that line is what the request-log route returns.
 */
describe('request logs: the lines a request wrote through its own logger', () => {
  let fake: FakeVendor;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('acme');
  let id = '';

  before(async () => {
    fake = await startFakeOpenAI();
    const dir = scratchDir('gw-tel-logs-');
    const corrupt = { org_policy: { 'model_access:acme': { org_id: 'acme', models: 5, updated_at: '2026-01-01T00:00:00Z' } } };
    await writeFile(join(dir, 'state.json'), JSON.stringify(corrupt));
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin, GW_DATA_DIR: dir, GW_SECRETS_KEY: SECRETS_KEY } });
    const res = await call(gw, '/v1/chat/completions', { key: devKey, headers: { 'x-gw-provider-key': 'sk-upstream-secret-1' }, body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] } });
    assert.equal(res.headers.get('x-gw-served-by'), 'direct_passthrough');
    id = String(res.headers.get('x-gw-request-id'));
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  it('returns the request\'s lines with seq, level, logger and message, filtered by level, q, logger and after', async () => {
    const all = await call(gw, `/api/v1/logs/request/${id}?tenant_id=acme`, { key: devKey });
    assert.equal(all.status, 200);
    const lines = all.json['data'] as Array<Record<string, unknown>>;
    const fault = lines.find((l) => String(l['msg']).includes('relaying directly to the provider'));
    assert.ok(fault, JSON.stringify(lines));
    assert.equal(fault['level'], 'warn');
    assert.equal(fault['logger'], 'gateway');
    assert.equal(fault['stage'], 'admission');
    assert.equal(typeof fault['seq'], 'number');
    assert.ok(!JSON.stringify(all.json).includes('sk-upstream-secret-1'), 'no credential in the lines');
    const q = (query: string) => call(gw, `/api/v1/logs/request/${id}?tenant_id=acme&${query}`, { key: devKey }).then((r) => r.json['data'] as unknown[]);
    assert.equal((await q('level=error')).length, 0);
    assert.equal((await q('level=warn')).length, lines.length);
    assert.equal((await q('q=directly')).length, 1);
    assert.equal((await q('q=nothing-like-this')).length, 0);
    assert.equal((await q('logger=other')).length, 0);
    assert.equal((await q(`after=${String(fault['seq'])}`)).length, lines.length - Number(fault['seq']));
  });

  it('lists the fail-open request first in the inspector feed', async () => {
    const listed = await call(gw, `/api/v1/requests?tenant_id=acme`, { key: devKey });
    assert.equal((listed.json['data'] as Array<Record<string, unknown>>)[0]?.['request_id'], id);
  });
});
