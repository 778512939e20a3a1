import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { GatewayError } from '../../src/errors.js';
import { StageClock } from '../../src/http/stages.js';
import type { GatewayRequest } from '../../src/http/types.js';
import { EmbeddedDocStore } from '../../src/stores/embedded/doc-store.js';
import { TenantAdmin } from '../../src/tenancy/admin.js';
import { Directory } from '../../src/tenancy/directory.js';
import { Entitlement, namedTenants, type Principal } from '../../src/tenancy/entitlement.js';
import { IdpVerifier } from '../../src/tenancy/idp.js';
import { createLogger } from '../../src/telemetry/log.js';
import { scratchDir } from '../helpers/scratch.js';

const CONFIG = 'config-secret-0123456789abcdef';
const ADMIN = 'admin-key-0123456789abcdef';
const ISSUER = 'https://idp.unit.test/';

function request(headers: Record<string, string> = {}, params: Record<string, string> = {}, query = ''): GatewayRequest {
  return { id: 'r', method: 'POST', path: '/', query, headers, params, body: Buffer.alloc(0), stages: new StageClock(), log: createLogger('silent') };
}

/** Runs `fn` and returns the GatewayError it throws. */
async function refusal(fn: () => unknown): Promise<GatewayError> {
  try {
    await fn();
  } catch (err) {
    assert.ok(err instanceof GatewayError, String(err));
    return err;
  }
  assert.fail('expected a refusal');
}

describe('Entitlement: one authorization rule for tenant-scoped routes', () => {
  let ent: Entitlement;
  let acmeKey: string;
  let idpKey: CryptoKey;

  before(async () => {
    const store = new EmbeddedDocStore();
    await store.start();
    const directory = new Directory(store);
    const admin = new TenantAdmin(store, directory, 50);
    await admin.upsertOrg({ org_id: 'acme' });
    await admin.upsertOrg({ org_id: 'acme-eu', parent_org_id: 'acme' });
    await admin.upsertOrg({ org_id: 'other' });
    acmeKey = (await admin.createKey({ org_id: 'acme', dev_key_id: 'dk-acme' })).api_key;
    await admin.createKey({ org_id: 'acme-eu', dev_key_id: 'dk-eu' });
    await admin.createKey({ org_id: 'other', dev_key_id: 'dk-other' });
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    idpKey = privateKey;
    const file = join(scratchDir('gw-ent-'), 'jwks.json');
    await writeFile(file, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }] }));
    const idp = await IdpVerifier.create({ issuer: ISSUER, jwks: file, groupMap: JSON.stringify({ eng: 'acme', ops: ['acme', 'other'] }) });
    ent = new Entitlement({ directory, configSecret: CONFIG, adminKey: ADMIN, idp });
  });

  const token = (groups: string[]) => new SignJWT({ groups }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setIssuer(ISSUER).setExpirationTime('1m').sign(idpKey);
  const identify = (headers: Record<string, string>, deploymentSecrets = true) => ent.identify(request(headers), { deploymentSecrets });

  it('no credential, an unknown gw_ key or a wrong config secret is 401 invalid_developer_key', async () => {
    const presented: Array<Record<string, string>> = [{}, { authorization: 'Bearer gw_unknownunknownunknownunknownunknown1234' }, { 'x-gw-config-secret': 'nope' }, { 'x-gw-key': 'gw_nope' }];
    for (const headers of presented) {
      const err = await refusal(() => identify(headers));
      assert.equal(err.type, 'invalid_developer_key', JSON.stringify(headers));
    }
  });

  it('an org key acts on its own tenant only: naming another is 403 forbidden', async () => {
    const p = await identify({ 'x-gw-key': acmeKey });
    assert.equal(ent.tenant(p, [undefined]).org_id, 'acme');
    assert.equal(ent.tenant(p, ['acme', 'acme']).org_id, 'acme');
    const err = await refusal(() => ent.tenant(p, ['other']));
    assert.equal(err.type, 'forbidden');
    assert.equal(err.status, 403);
    assert.equal((await refusal(() => ent.tenant(p, ['acme-eu']))).type, 'forbidden', 'a sub-tenant is another tenant for this rule');
  });

  it('deployment secrets (bearer, x-gw-config-secret, x-gw-admin-key) must name the tenant, and only where allowed', async () => {
    const presented: Array<Record<string, string>> = [{ authorization: `Bearer ${CONFIG}` }, { 'x-gw-config-secret': CONFIG }, { 'x-gw-admin-key': ADMIN }, { authorization: `Bearer ${ADMIN}` }];
    for (const headers of presented) {
      const p: Principal = await identify(headers);
      assert.equal(p.kind, 'deployment');
      assert.equal(ent.tenant(p, ['other']).org_id, 'other');
      assert.equal((await refusal(() => ent.tenant(p, [undefined]))).type, 'request_error');
    }
    assert.equal((await refusal(() => identify({ authorization: `Bearer ${CONFIG}` }, false))).type, 'idp_authentication_error', 'not a secret here: read as an IdP token');
    assert.equal((await refusal(() => identify({ 'x-gw-config-secret': CONFIG }, false))).type, 'invalid_developer_key');
  });

  it('two different tenants named at once is 403', async () => {
    const p = await identify({ 'x-gw-config-secret': CONFIG });
    assert.equal((await refusal(() => ent.tenant(p, ['acme', 'other']))).type, 'forbidden');
  });

  it('namedTenants reads the path org_id, the query and the body tenant_id', () => {
    assert.deepEqual(namedTenants(request({}, { org_id: 'a' }, 'x=1&tenant_id=b'), { tenant_id: 'c' }), ['a', 'b', 'c']);
    assert.throws(() => namedTenants(request(), { tenant_id: 7 }), /tenant_id/);
  });

  it('IdP tokens: their groups’ orgs; several orgs need a name; outside is idp_forbidden_error', async () => {
    const one = await identify({ authorization: `Bearer ${await token(['eng'])}` });
    assert.equal(ent.tenant(one, [undefined]).org_id, 'acme');
    assert.equal((await refusal(() => ent.tenant(one, ['other']))).type, 'idp_forbidden_error');
    const two = await identify({ authorization: `Bearer ${await token(['ops'])}` });
    assert.equal((await refusal(() => ent.tenant(two, [undefined]))).type, 'request_error');
    assert.equal(ent.tenant(two, ['other']).org_id, 'other');
    const unmapped = await token(['sales']);
    assert.equal((await refusal(() => identify({ authorization: `Bearer ${unmapped}` }))).type, 'idp_forbidden_error');
    assert.equal((await refusal(() => identify({ authorization: 'Bearer a.b.c' }))).type, 'idp_authentication_error');
  });

  it('a key named by id is authorized before existence: unknown and foreign ids answer alike', async () => {
    const acme = ent.tenant(await identify({ 'x-gw-key': acmeKey }), [undefined]);
    assert.equal(ent.key(acme, 'dk-acme').key.dev_key_id, 'dk-acme');
    assert.equal(ent.key(acme, 'dk-eu').owner.org_id, 'acme-eu', 'a sub-tenant’s key is within the org');
    const foreign = await refusal(() => ent.key(acme, 'dk-other'));
    const unknown = await refusal(() => ent.key(acme, 'dk-ghost'));
    assert.equal(foreign.type, 'not_found');
    assert.equal(foreign.status, unknown.status);
    assert.equal(foreign.message.replace('dk-other', 'X'), unknown.message.replace('dk-ghost', 'X'));
  });
});
