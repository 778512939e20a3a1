import { GatewayError } from '../errors.js';
import { bearerToken } from '../http/credentials.js';
import type { GatewayRequest, Route } from '../http/types.js';
import { parseJsonObject } from '../http/validate.js';
import { SURFACES } from '../surfaces/index.js';
import { parseDevKeyInput, parseOrgInput, parseRevokeInput, type TenantAdmin } from '../tenancy/admin.js';
import { secretEquals } from '../tenancy/secrets.js';
import type { Logger } from '../telemetry/log.js';
import { sendJson } from './respond.js';

const surface = SURFACES.api;

/** Admin credential: `Authorization: Bearer <GW_ADMIN_KEY>` or `x-gw-admin-key`, compared in constant time. */
function requireAdmin(req: GatewayRequest, adminKey: string | undefined): void {
  const presented = req.headers['x-gw-admin-key'] ?? bearerToken(req.headers['authorization']);
  if (adminKey === undefined || presented === undefined || !secretEquals(presented, adminKey)) {
    throw new GatewayError('invalid_admin_key', 'this route needs the deployment admin key');
  }
}

/** What an audit line records of one admin change: never a secret. */
interface AuditEntry {
  action: 'org.create' | 'org.unchanged' | 'dev_key.create' | 'dev_key.revoke';
  org_id: string;
  key_id?: string;
  dev_key_id?: string;
}

/**
 * One `admin change` log line per admin write: who (the deployment admin
 * credential, the only one these routes accept), what, when, and the request id
 * to find the access line by.
 */
function audit(log: Logger, req: GatewayRequest, entry: AuditEntry): void {
  log.info({ audit: { actor: 'admin_key', ...entry, at: new Date().toISOString(), req_id: req.id } }, 'admin change');
}

function queryParam(req: GatewayRequest, name: string): string {
  const value = new URLSearchParams(req.query).get(name);
  if (value === null || value === '') throw new GatewayError('request_error', `${name}: required query parameter`, { fields: { field: name } });
  return value;
}

/** The admin routes: orgs and developer keys, behind GW_ADMIN_KEY; every change is an audit log line. */
export function adminRoutes(admin: TenantAdmin, adminKey: string | undefined, log: Logger): Route[] {
  return [
    {
      method: 'POST',
      path: '/api/v1/admin/orgs',
      surface,
      async handler(req, res) {
        requireAdmin(req, adminKey);
        const input = parseOrgInput(parseJsonObject(req.body));
        req.stages.begin('store_write');
        const { created, org } = await admin.upsertOrg(input);
        req.stages.end();
        audit(log, req, { action: created ? 'org.create' : 'org.unchanged', org_id: org.org_id });
        sendJson(res, created ? 201 : 200, org);
      },
    },
    {
      method: 'GET',
      path: '/api/v1/admin/orgs',
      surface,
      handler(req, res) {
        requireAdmin(req, adminKey);
        sendJson(res, 200, { object: 'list', data: admin.listOrgs() });
      },
    },
    {
      method: 'POST',
      path: '/api/v1/admin/dev_keys',
      surface,
      async handler(req, res) {
        requireAdmin(req, adminKey);
        const input = parseDevKeyInput(parseJsonObject(req.body));
        req.stages.begin('store_write');
        const { key, api_key } = await admin.createKey(input);
        req.stages.end();
        audit(log, req, { action: 'dev_key.create', org_id: key.org_id, key_id: key.key_id, dev_key_id: key.dev_key_id });
        sendJson(res, 201, { key_id: key.key_id, dev_key_id: key.dev_key_id, org_id: key.org_id, api_key });
      },
    },
    {
      method: 'GET',
      path: '/api/v1/admin/dev_keys',
      surface,
      handler(req, res) {
        requireAdmin(req, adminKey);
        sendJson(res, 200, { object: 'list', data: admin.listKeys(queryParam(req, 'org_id')) });
      },
    },
    {
      method: 'POST',
      path: '/api/v1/admin/dev_keys/revoke',
      surface,
      async handler(req, res) {
        requireAdmin(req, adminKey);
        const input = parseRevokeInput(parseJsonObject(req.body));
        req.stages.begin('store_write');
        const key = await admin.revoke(input);
        req.stages.end();
        audit(log, req, { action: 'dev_key.revoke', org_id: key.org_id, key_id: key.key_id, dev_key_id: key.dev_key_id });
        sendJson(res, 200, { status: 'success', key_id: key.key_id, dev_key_id: key.dev_key_id, revoked_at: key.revoked_at });
      },
    },
  ];
}
