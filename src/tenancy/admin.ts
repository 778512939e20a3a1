import { readFile } from 'node:fs/promises';
import { Type, type Static } from '@sinclair/typebox';
import { GatewayError } from '../errors.js';
import { compileSchema } from '../http/validate.js';
import type { DocStore } from '../stores/types.js';
import type { Directory } from './directory.js';
import { DEV_KEY_SECRET, KEY_ID, hashSecret, keyIdForSecret, newDevKeySecret, newKeyId } from './secrets.js';
import type { DevKey, Org, Plan } from './types.js';

const OrgId = Type.String({ pattern: '^[a-z0-9_-]{1,64}$' });
const DevKeyId = Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,128}$' });
const PlanT = Type.Union([Type.Literal('free'), Type.Literal('team'), Type.Literal('enterprise')]);

export const OrgInput = Type.Object(
  {
    org_id: OrgId,
    parent_org_id: Type.Optional(Type.Union([OrgId, Type.Null()])),
    plan: Type.Optional(PlanT),
    rps_cap: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
  },
  { additionalProperties: false },
);
export const DevKeyInput = Type.Object(
  {
    org_id: OrgId,
    dev_key_id: Type.Optional(DevKeyId),
    name: Type.Optional(Type.String({ maxLength: 200 })),
    expires_at: Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()])),
  },
  { additionalProperties: false },
);
export const RevokeInput = Type.Object(
  { key_id: Type.Optional(Type.String({ minLength: 1 })), dev_key_id: Type.Optional(Type.String({ minLength: 1 })) },
  { additionalProperties: false },
);
const BootstrapKey = Type.Object(
  {
    org_id: OrgId,
    key_id: Type.Optional(Type.String({ pattern: KEY_ID.source })),
    dev_key_id: Type.Optional(DevKeyId),
    name: Type.Optional(Type.String({ maxLength: 200 })),
    api_key: Type.String({ pattern: DEV_KEY_SECRET.source }),
  },
  { additionalProperties: false },
);
const BootstrapFile = Type.Object(
  { orgs: Type.Optional(Type.Array(OrgInput)), dev_keys: Type.Optional(Type.Array(BootstrapKey)) },
  { additionalProperties: false },
);

export const parseOrgInput = compileSchema(OrgInput);
export const parseDevKeyInput = compileSchema(DevKeyInput);
export const parseRevokeInput = compileSchema(RevokeInput);
const parseBootstrap = compileSchema(BootstrapFile);

/** A developer key as the admin routes show it: everything but the secret's hash. */
export type PublicDevKey = Omit<DevKey, 'secret_hash'>;

/** Writes to orgs and developer keys (admin routes and GW_BOOTSTRAP). */
export class TenantAdmin {
  constructor(
    private readonly store: DocStore,
    private readonly directory: Directory,
    private readonly defaultRpsCap: number,
  ) {}

  /** 201 created, 200 when it exists with the same fields, 409 when it differs (decided atomically across replicas) */
  async upsertOrg(input: Static<typeof OrgInput>): Promise<{ created: boolean; org: Org }> {
    const parent = input.parent_org_id ?? null;
    if (parent !== null) {
      if (!this.directory.org(parent)) throw new GatewayError('request_error', `parent_org_id: org ${parent} does not exist`, { fields: { field: 'parent_org_id' } });
      if (parent === input.org_id || this.directory.isWithin(parent, input.org_id)) {
        throw new GatewayError('request_error', 'parent_org_id: would make a cycle', { fields: { field: 'parent_org_id' } });
      }
    }
    const wanted = { org_id: input.org_id, parent_org_id: parent, plan: (input.plan ?? 'team') as Plan, rps_cap: input.rps_cap ?? this.defaultRpsCap };
    const org: Org = { ...wanted, created_at: new Date().toISOString() };
    const { created, current } = await this.store.create('orgs', org.org_id, org);
    if (created) return { created, org: current };
    const same = current.parent_org_id === wanted.parent_org_id && current.plan === wanted.plan && current.rps_cap === wanted.rps_cap;
    if (!same) throw new GatewayError('conflict', `org ${input.org_id} exists with different fields`);
    return { created, org: current };
  }

  async createKey(input: Static<typeof DevKeyInput>, secret = newDevKeySecret(), keyId = newKeyId()): Promise<{ key: DevKey; api_key: string }> {
    if (!this.directory.org(input.org_id)) throw new GatewayError('request_error', `org_id: org ${input.org_id} does not exist`, { fields: { field: 'org_id' } });
    const devKeyId = input.dev_key_id ?? keyId;
    // dev_key_id uniqueness is checked against this replica's mirror: two replicas racing on the same new id is not excluded
    if (this.directory.key(devKeyId) || this.directory.key(keyId)) throw new GatewayError('conflict', `key ${devKeyId} already exists`);
    const key: DevKey = {
      key_id: keyId,
      dev_key_id: devKeyId,
      org_id: input.org_id,
      name: input.name ?? null,
      secret_hash: hashSecret(secret),
      created_at: new Date().toISOString(),
      expires_at: input.expires_at ?? null,
      revoked_at: null,
    };
    const { created, current } = await this.store.create('dev_keys', key.key_id, key);
    // the same secret under the same id is the same key (GW_BOOTSTRAP applied by two replicas at once)
    if (!created && current.secret_hash !== key.secret_hash) throw new GatewayError('conflict', `key ${keyId} already exists`);
    return { key: current, api_key: secret };
  }

  async revoke(input: Static<typeof RevokeInput>): Promise<DevKey> {
    const id = input.key_id ?? input.dev_key_id;
    if (id === undefined) throw new GatewayError('request_error', 'key_id: key_id or dev_key_id is required', { fields: { field: 'key_id' } });
    const key = this.directory.key(id);
    if (!key) throw new GatewayError('not_found', `no key ${id}`);
    if (input.key_id !== undefined && input.dev_key_id !== undefined && key.dev_key_id !== input.dev_key_id) {
      throw new GatewayError('request_error', 'dev_key_id: names another key than key_id', { fields: { field: 'dev_key_id' } });
    }
    if (key.revoked_at !== null) return key;
    const revoked = { ...key, revoked_at: new Date().toISOString() };
    await this.store.put('dev_keys', key.key_id, revoked);
    return revoked;
  }

  /** Every org, by org_id. */
  listOrgs(): Org[] {
    return [...this.store.values<Org>('orgs')].sort((a, b) => a.org_id.localeCompare(b.org_id));
  }

  /** An org's developer keys (revoked ones too), without their secret hashes; 404 for an unknown org. */
  listKeys(orgId: string): PublicDevKey[] {
    if (!this.directory.org(orgId)) throw new GatewayError('not_found', `no org ${orgId}`);
    return this.directory
      .keysOf(orgId)
      .map(({ secret_hash: _hash, ...rest }) => rest)
      .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.key_id.localeCompare(b.key_id));
  }

  /**
   * Applies a GW_BOOTSTRAP file; running it again changes nothing. Any problem
   * is an Error naming GW_BOOTSTRAP and the file, meant to stop start-up.
   */
  async bootstrap(path: string): Promise<{ orgs: number; keys: number }> {
    try {
      return await this.applyBootstrap(parseBootstrap(JSON.parse(await readFile(path, 'utf8')), 'GW_BOOTSTRAP'));
    } catch (err) {
      throw new Error(`GW_BOOTSTRAP: cannot apply ${path}: ${(err as Error).message}`, { cause: err });
    }
  }

  private async applyBootstrap(file: Static<typeof BootstrapFile>): Promise<{ orgs: number; keys: number }> {
    let orgs = 0;
    let keys = 0;
    // parents first, whatever order the file lists them in; an unknown parent fails in upsertOrg
    const pending = [...(file.orgs ?? [])];
    while (pending.length > 0) {
      const ready = pending.findIndex((o) => !o.parent_org_id || this.directory.org(o.parent_org_id) || !pending.some((p) => p.org_id === o.parent_org_id));
      const [org] = pending.splice(Math.max(ready, 0), 1);
      if (!org) break;
      if ((await this.upsertOrg(org)).created) orgs++;
    }
    for (const k of file.dev_keys ?? []) {
      const { api_key, key_id, ...rest } = k;
      const existing = this.directory.keyBySecretHash(hashSecret(api_key));
      if (existing) {
        if (existing.org_id !== k.org_id || (key_id !== undefined && existing.key_id !== key_id)) {
          throw new GatewayError('conflict', `dev_keys: the secret of ${key_id ?? k.dev_key_id ?? 'a key'} already belongs to key ${existing.key_id} of org ${existing.org_id}`);
        }
        continue;
      }
      await this.createKey(rest, api_key, key_id ?? keyIdForSecret(api_key));
      keys++;
    }
    return { orgs, keys };
  }
}
