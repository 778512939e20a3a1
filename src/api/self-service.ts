import { Type } from '@sinclair/typebox';
import { GatewayError } from '../errors.js';
import type { GatewayRequest, Route } from '../http/types.js';
import { compileSchema } from '../http/validate.js';
import { isCatalogId } from '../providers/catalog.js';
import { PROVIDER_IDS } from '../providers/types.js';
import { SURFACES } from '../surfaces/index.js';
import type { Directory } from '../tenancy/directory.js';
import { namedTenants, type Entitlement, type IdentifyOptions } from '../tenancy/entitlement.js';
import type { ModelAccess } from '../tenancy/model-access.js';
import type { KeySkills } from '../tenancy/skills.js';
import type { SpendCaps } from '../tenancy/spend-cap.js';
import type { Org } from '../tenancy/types.js';
import type { VendorKeys } from '../tenancy/vendor-keys.js';
import { sendJson } from './respond.js';

const surface = SURFACES.api;
/** The caller's own org, from its developer key (or an IdP token); no deployment secrets */
const OWN_ORG: IdentifyOptions = { deploymentSecrets: false };

const TenantId = Type.Optional(Type.String({ pattern: '^[a-z0-9_-]{1,64}$' }));
const Provider = Type.Union(PROVIDER_IDS.map((p) => Type.Literal(p)));
/** a named key of a provider, beside its unnamed one (merit-order dispatch) */
const KeyName = Type.Optional(Type.String({ pattern: '^[a-z0-9_-]{1,32}$' }));

export const VendorKeyCreateBody = Type.Object(
  {
    provider: Provider,
    api_key: Type.String({ minLength: 1, maxLength: 8192 }),
    credential_kind: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
    endpoint: Type.Optional(Type.String({ minLength: 1, maxLength: 300 })),
    region: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    project: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    location: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    name: KeyName,
    merit: Type.Optional(Type.Number({ minimum: 0, maximum: 1e9 })),
    last_resort: Type.Optional(Type.Boolean()),
    max_inflight: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    tenant_id: TenantId,
  },
  { additionalProperties: false },
);
const parseCreate = compileSchema(VendorKeyCreateBody);
export const VendorKeyDeleteBody = Type.Object({ provider: Provider, name: KeyName, tenant_id: TenantId }, { additionalProperties: false });
const parseDelete = compileSchema(VendorKeyDeleteBody);
export const SpendCapBody = Type.Object(
  {
    cap_usd: Type.Union([Type.Number({ minimum: 0, maximum: 1e9 }), Type.Null()]),
    period: Type.Optional(Type.Union([Type.Literal('day'), Type.Literal('month')])),
    tenant_id: TenantId,
  },
  { additionalProperties: false },
);
const parseSpendCap = compileSchema(SpendCapBody);
export const ModelAccessBody = Type.Object(
  { models: Type.Union([Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 1000 }), Type.Null()]), tenant_id: TenantId },
  { additionalProperties: false },
);
const parseModelAccess = compileSchema(ModelAccessBody);

export interface SelfServiceDeps {
  entitlement: Entitlement;
  directory: Directory;
  vendorKeys: VendorKeys;
  modelAccess: ModelAccess;
  /** the spend-cap engine: stores the cap and meters consumption across replicas */
  spendCaps: Pick<SpendCaps, 'status' | 'setCap'>;
  skills: KeySkills;
}

/**
 * Self-service configuration (docs/api.md, Stored provider keys; Settings): the
 * caller's own org, from its developer key (or an IdP token mapped to it);
 * a request naming another tenant_id is 403.
 */
export function selfServiceRoutes(deps: SelfServiceDeps): Route[] {
  const { entitlement, vendorKeys, modelAccess, spendCaps } = deps;

  const post = (path: string, handle: (req: GatewayRequest, body: Record<string, unknown>, org: Org) => Promise<unknown>): Route => ({
    method: 'POST',
    path,
    surface,
    async handler(req, res) {
      const { body, tenant: org } = await entitlement.forJsonBody(req, OWN_ORG);
      res.meta.tenant = org.org_id;
      sendJson(res, 200, await handle(req, body, org));
    },
  });

  return [
    post('/api/v1/vendor_key/create', async (req, body, org) => {
      const input = parseCreate(body);
      req.stages.begin('byok_store');
      const stored = await vendorKeys.create(org.org_id, input, req.stages);
      req.stages.end();
      return { status: 'success', ...stored };
    }),
    post('/api/v1/vendor_key/delete', async (req, body, org) => {
      const { provider, name } = parseDelete(body);
      req.stages.begin('byok_store');
      const deleted = await vendorKeys.remove(org.org_id, provider, req.stages, name);
      req.stages.end();
      return { status: 'success', provider, ...(name !== undefined && { name }), deleted };
    }),
    post('/api/v1/spend_cap/update', async (req, body, org) => {
      const input = parseSpendCap(body);
      req.stages.begin('store_write');
      const status = await spendCaps.setCap(org.org_id, input.cap_usd, input.period);
      req.stages.end();
      return { status: 'success', spend_cap: status ?? NO_CAP };
    }),
    post('/api/v1/model_access/update', async (req, body, org) => {
      const { models } = parseModelAccess(body);
      const unknown = (models ?? []).filter((m) => !isCatalogId(m));
      if (unknown.length > 0) throw new GatewayError('request_error', `models: not in the catalog: ${unknown.join(', ')}`, { fields: { field: 'models', unknown } });
      const enabled = models === null ? null : [...new Set(models)];
      req.stages.begin('store_write');
      await modelAccess.set(org.org_id, enabled);
      req.stages.end();
      return { status: 'success', model_access: { models: enabled } };
    }),
    {
      method: 'GET',
      path: '/api/v1/settings',
      surface,
      async handler(req, res) {
        const org = entitlement.tenant(await entitlement.identify(req, OWN_ORG), namedTenants(req));
        res.meta.tenant = org.org_id;
        sendJson(res, 200, await settingsView(deps, org));
      },
    },
  ];
}

const NO_CAP = { cap_usd: null, period: null, consumed_usd: null, resets_at: null };

/** GET /api/v1/settings: everything the org configured; secrets appear only as key hints. */
async function settingsView(deps: SelfServiceDeps, org: Org) {
  return {
    org_id: org.org_id,
    parent_org_id: org.parent_org_id,
    plan: org.plan,
    rps_cap: org.rps_cap,
    spend_cap: (await deps.spendCaps.status(org.org_id)) ?? NO_CAP,
    model_access: { models: deps.modelAccess.models(org.org_id) },
    vendor_keys: deps.vendorKeys.list(org.org_id),
    dev_keys: deps.directory
      .keysOf(org.org_id)
      .filter((k) => k.revoked_at === null)
      .map((k) => {
        // the stored document also carries bookkeeping (org_id, updated_at): the settings shape lists exactly these fields
        const { skills, skill_modes, locked_skills, skill_params } = deps.skills.config(k.key_id);
        return { key_id: k.key_id, dev_key_id: k.dev_key_id, skills, skill_modes, locked_skills, skill_params };
      }),
  };
}
