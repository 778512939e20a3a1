import { GatewayError } from '../errors.js';
import { bearerToken } from '../http/credentials.js';
import type { GatewayRequest, Route } from '../http/types.js';
import { parseJsonObject } from '../http/validate.js';
import { SURFACES } from '../surfaces/index.js';
import { parseDevKeyInput, parseOrgInput, parseRevokeInput, type TenantAdmin } from '../tenancy/admin.js';
import { secretEquals } from '../tenancy/secrets.js';
import { sendJson } from './respond.js';

const surface = SURFACES.api;

/** Admin credential: `Authorization: Bearer <GW_ADMIN_KEY>` or `x-gw-admin-key`, compared in constant time. */
function requireAdmin(req: GatewayRequest, adminKey: string | undefined): void {
  const presented = req.headers['x-gw-admin-key'] ?? bearerToken(req.headers['authorization']);
  if (adminKey === undefined || presented === undefined || !secretEquals(presented, adminKey)) {
    throw new GatewayError('invalid_admin_key', 'this route needs the deployment admin key');
  }
}

/** The admin routes: orgs and developer keys, behind GW_ADMIN_KEY. */
export function adminRoutes(admin: TenantAdmin, adminKey: string | undefined): Route[] {
  return [
    {
      method: 'POST',
      path: '/api/v1/admin/orgs',
      surface,
      async handler(req, res) {
        requireAdmin(req, adminKey);
        const { created, org } = await admin.upsertOrg(parseOrgInput(parseJsonObject(req.body)));
        sendJson(res, created ? 201 : 200, org);
      },
    },
    {
      method: 'POST',
      path: '/api/v1/admin/dev_keys',
      surface,
      async handler(req, res) {
        requireAdmin(req, adminKey);
        const { key, api_key } = await admin.createKey(parseDevKeyInput(parseJsonObject(req.body)));
        sendJson(res, 201, { key_id: key.key_id, dev_key_id: key.dev_key_id, org_id: key.org_id, api_key });
      },
    },
    {
      method: 'POST',
      path: '/api/v1/admin/dev_keys/revoke',
      surface,
      async handler(req, res) {
        requireAdmin(req, adminKey);
        const key = await admin.revoke(parseRevokeInput(parseJsonObject(req.body)));
        sendJson(res, 200, { status: 'success', key_id: key.key_id, dev_key_id: key.dev_key_id, revoked_at: key.revoked_at });
      },
    },
  ];
}
