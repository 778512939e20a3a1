import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EmbeddedDocStore } from '../../src/stores/embedded/doc-store.js';
import { TenantAdmin } from '../../src/tenancy/admin.js';
import { Directory } from '../../src/tenancy/directory.js';
import { hashSecret, keyIdForSecret } from '../../src/tenancy/secrets.js';
import type { DevKey } from '../../src/tenancy/types.js';

async function setup() {
  const store = new EmbeddedDocStore();
  await store.start();
  const directory = new Directory(store);
  const admin = new TenantAdmin(store, directory, 50);
  await admin.upsertOrg({ org_id: 'acme' });
  return { store, directory, admin };
}

describe('Directory', () => {
  it('authenticates an active key and refuses unknown, revoked and expired ones alike', async () => {
    const { directory, admin } = await setup();
    const { key, api_key } = await admin.createKey({ org_id: 'acme', dev_key_id: 'dk-1' });
    assert.equal(directory.authenticate(api_key)?.key.key_id, key.key_id);
    assert.equal(directory.authenticate(api_key)?.org.org_id, 'acme');
    // one character changed (never to itself: a random key ends in x one time in 62)
    assert.equal(directory.authenticate(`${api_key.slice(0, -1)}${api_key.endsWith('x') ? 'y' : 'x'}`), undefined);
    const expiring = await admin.createKey({ org_id: 'acme', expires_at: '2030-01-01T00:00:00Z' });
    assert.ok(directory.authenticate(expiring.api_key, Date.parse('2029-12-31T23:59:59Z')));
    assert.equal(directory.authenticate(expiring.api_key, Date.parse('2030-01-01T00:00:00Z')), undefined);
    await admin.revoke({ dev_key_id: 'dk-1' });
    assert.equal(directory.authenticate(api_key), undefined);
  });

  it('finds a key by key_id or dev_key_id, and follows changes written straight to the store', async () => {
    const { store, directory, admin } = await setup();
    const { key, api_key } = await admin.createKey({ org_id: 'acme', dev_key_id: 'console-1' });
    assert.equal(directory.key(key.key_id)?.dev_key_id, 'console-1');
    assert.equal(directory.key('console-1')?.key_id, key.key_id);
    // another replica renames the console id and rotates the secret
    await store.put('dev_keys', key.key_id, { ...key, dev_key_id: 'console-2', secret_hash: hashSecret('gw_rotated') } satisfies DevKey);
    assert.equal(directory.key('console-1'), undefined);
    assert.equal(directory.key('console-2')?.key_id, key.key_id);
    assert.equal(directory.authenticate(api_key), undefined);
    assert.equal(directory.authenticate('gw_rotated')?.key.key_id, key.key_id);
    await store.delete('dev_keys', key.key_id);
    assert.equal(directory.key(key.key_id), undefined);
    assert.equal(directory.authenticate('gw_rotated'), undefined);
  });

  it('an unparseable expiry fails closed', async () => {
    const { store, directory, admin } = await setup();
    const { key, api_key } = await admin.createKey({ org_id: 'acme' });
    await store.put('dev_keys', key.key_id, { ...key, expires_at: 'not a date' });
    assert.equal(directory.authenticate(api_key), undefined);
  });

  it('a key whose org is gone does not authenticate', async () => {
    const { store, directory, admin } = await setup();
    const { api_key } = await admin.createKey({ org_id: 'acme' });
    await store.delete('orgs', 'acme');
    assert.equal(directory.authenticate(api_key), undefined);
  });

  it('isWithin walks sub-tenants at any depth and survives a cycle in stored data', async () => {
    const { store, directory, admin } = await setup();
    await admin.upsertOrg({ org_id: 'acme-eu', parent_org_id: 'acme' });
    await admin.upsertOrg({ org_id: 'acme-eu-paris', parent_org_id: 'acme-eu' });
    assert.equal(directory.isWithin('acme-eu-paris', 'acme'), true);
    assert.equal(directory.isWithin('acme', 'acme-eu'), false);
    await store.put('orgs', 'loop-a', { org_id: 'loop-a', parent_org_id: 'loop-b', plan: 'team', rps_cap: 1, created_at: '' });
    await store.put('orgs', 'loop-b', { org_id: 'loop-b', parent_org_id: 'loop-a', plan: 'team', rps_cap: 1, created_at: '' });
    assert.equal(directory.isWithin('loop-a', 'acme'), false);
  });

  it('bootstrapped key ids are derived from the secret: stable, well-formed, distinct', () => {
    const a = keyIdForSecret(`gw_${'a'.repeat(40)}`);
    assert.match(a, /^key_[a-z2-7]{20}$/);
    assert.equal(keyIdForSecret(`gw_${'a'.repeat(40)}`), a);
    assert.notEqual(keyIdForSecret(`gw_${'b'.repeat(40)}`), a);
  });
});
