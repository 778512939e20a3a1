import { pino } from 'pino';
import { GatewayError } from '../errors.js';
import type { GatewayRequest, ResponseSink, Route } from '../http/types.js';
import { SURFACES } from '../surfaces/index.js';
import type { Directory } from '../tenancy/directory.js';
import { namedTenants, type Entitlement, type IdentifyOptions, type Principal } from '../tenancy/entitlement.js';
import type { Org } from '../tenancy/types.js';
import { MAX_REQUEST_LINES } from '../telemetry/request-log.js';
import type { InspectorRing, RingEntry } from '../telemetry/ring.js';
import { inspectorRow } from '../telemetry/row.js';
import type { StreamReader } from '../telemetry/stream-reader.js';
import { DIMENSION_ALIASES, DIMENSION_NAMES, dimensionNamed, type Bucket, type Dimension } from '../telemetry/usage.js';
import { sendJson } from './respond.js';

const surface = SURFACES.api;
/** Telemetry routes also take the deployment's config secret or admin key naming the tenant */
const ENTITLED: IdentifyOptions = { deploymentSecrets: true };

export const INSPECTOR_MAX_LIMIT = 100;
export const DURABLE_MAX_LIMIT = 500;
export const USAGE_MAX_LIMIT = 10_000;

const WINDOWS: Readonly<Record<string, number>> = { '15m': 15 * 60_000, '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000 };
const BUCKETS: readonly Bucket[] = ['hour', 'day', 'week'];

/** inspector filters by query parameter: the value they are compared with */
const INSPECTOR_FILTERS: Readonly<Record<string, (e: RingEntry) => string | null>> = {
  model: (e) => e.row.model,
  endpoint: (e) => e.row.surface,
  provider: (e) => e.row.provider,
  // the gateway does not classify queries: no row has a category, so any value matches none
  query_category: () => null,
  feature: (e) => e.row.use_case,
  cache: (e) => e.decision.cache.result,
};

/** durable-list columns that take exact-match filters */
export const DURABLE_FILTERS = [
  'session_id',
  'key_id',
  'model',
  'provider',
  'surface',
  'channel',
  'tier',
  'relay_reason',
  'optimization_state',
  'status',
  'cache_tier',
  'team',
  'use_case',
  'destination_id',
  'model_serving_route',
  'egress_mode',
] as const;

const badRequest = (field: string, message: string) => new GatewayError('request_error', `${field}: ${message}`, { fields: { field } });

/** The query's parameters; a repeated one is refused rather than guessed at. */
function params(req: GatewayRequest): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of new URLSearchParams(req.query)) {
    if (out.has(k)) throw badRequest(k, 'given more than once');
    out.set(k, v);
  }
  return out;
}

function refuseUnknown(p: Map<string, string>, allowed: ReadonlySet<string>, what: string): void {
  for (const k of p.keys()) if (!allowed.has(k)) throw badRequest(k, `unknown ${what}; allowed: ${[...allowed].join(', ')}`);
}

function limitOf(p: Map<string, string>, max: number, fallback: number): number {
  const raw = p.get('limit');
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw badRequest('limit', 'must be a positive integer');
  if (Number(raw) > max) throw badRequest('limit', `at most ${max}`);
  return Number(raw);
}

function windowOf(p: Map<string, string>, fallback: string): { name: string; ms: number } {
  const name = p.get('window') ?? fallback;
  const ms = WINDOWS[name];
  if (ms === undefined) throw badRequest('window', `must be one of ${Object.keys(WINDOWS).join(', ')}`);
  return { name, ms };
}

const storeOrRefuse = (reader: StreamReader | undefined): StreamReader => {
  if (!reader) throw new GatewayError('not_implemented', 'no telemetry store: this deployment runs without Redis (GW_REDIS_URL or GW_REDIS_CLUSTER), so durable rows and usage are not kept');
  return reader;
};

const DURABLE = { store: 'durable' } as const;
/** the inspector and request logs answer from the answering replica's memory */
const PROCESS = { store: 'process', pid: process.pid } as const;

export interface TelemetryRouteDeps {
  entitlement: Entitlement;
  directory: Directory;
  ring: InspectorRing;
  /** undefined without Redis: the durable routes answer 501 */
  reader: StreamReader | undefined;
}

/**
 * The tenant telemetry reads (docs/api.md, Telemetry): the process's
 * inspector feed and request logs, and, with Redis, the durable list, a
 * single request and usage, which every replica answers alike.
 */
export function telemetryRoutes(deps: TelemetryRouteDeps): Route[] {
  const { entitlement, directory, ring } = deps;

  /**
   * The tenant and key a key_id names. An org key reaches keys of its org and
   * sub-tenants; another credential reaches the key's owner if entitled to it.
   * An unknown id and one the credential may not see are the same 404.
   */
  const keyTenant = (principal: Principal, ref: string): { tenant: Org; keyId: string } => {
    if (principal.kind === 'dev_key') {
      const { key, owner } = entitlement.key(entitlement.tenant(principal, []), ref);
      return { tenant: owner, keyId: key.key_id };
    }
    const key = directory.key(ref);
    const visible = key && (principal.kind === 'deployment' || principal.identity.orgs.includes(key.org_id));
    if (!key || !visible) throw new GatewayError('not_found', `no key ${ref} this credential may read`);
    return { tenant: entitlement.tenant(principal, [key.org_id]), keyId: key.key_id };
  };

  /** the tenant of a durable read: the credential's own, or the one the deployment's secret names */
  const credentialTenant = async (req: GatewayRequest, res: ResponseSink): Promise<Org> => {
    const tenant = entitlement.tenant(await entitlement.identify(req, ENTITLED), namedTenants(req));
    res.meta.tenant = tenant.org_id;
    return tenant;
  };

  return [
    {
      method: 'GET',
      path: '/api/v1/requests',
      surface,
      async handler(req, res) {
        const principal = await entitlement.identify(req, ENTITLED);
        const p = params(req);
        refuseUnknown(p, new Set(['key_id', 'tenant_id', 'limit', ...Object.keys(INSPECTOR_FILTERS)]), 'parameter');
        const keyRef = p.get('key_id');
        const tenantName = p.get('tenant_id');
        if ((keyRef === undefined) === (tenantName === undefined)) throw badRequest(keyRef === undefined ? 'tenant_id' : 'key_id', 'give exactly one of key_id and tenant_id');
        const limit = limitOf(p, INSPECTOR_MAX_LIMIT, INSPECTOR_MAX_LIMIT);
        const scope = keyRef !== undefined ? keyTenant(principal, keyRef) : { tenant: entitlement.tenant(principal, [tenantName]), keyId: undefined };
        res.meta.tenant = scope.tenant.org_id;
        const filters = Object.entries(INSPECTOR_FILTERS).flatMap(([name, read]) => {
          const want = p.get(name);
          return want === undefined ? [] : [(e: RingEntry) => read(e) === want];
        });
        const entries = ring.list(
          (e) => e.row.tenant_id === scope.tenant.org_id && (scope.keyId === undefined || e.row.key_id === scope.keyId) && filters.every((f) => f(e)),
          limit,
        );
        sendJson(res, 200, { object: 'list', data: entries.map((e) => inspectorRow(e.row, e.decision, e.preview)), source: PROCESS });
      },
    },
    {
      method: 'GET',
      path: '/api/v1/logs/request/:request_id',
      surface,
      async handler(req, res) {
        const principal = await entitlement.identify(req, ENTITLED);
        const p = params(req);
        refuseUnknown(p, new Set(['tenant_id', 'after', 'limit', 'level', 'q', 'logger']), 'parameter');
        const tenantName = p.get('tenant_id');
        if (tenantName === undefined) throw badRequest('tenant_id', 'required');
        const tenant = entitlement.tenant(principal, [tenantName]);
        res.meta.tenant = tenant.org_id;
        const limit = limitOf(p, MAX_REQUEST_LINES, MAX_REQUEST_LINES);
        const after = p.get('after') ?? '0';
        if (!/^\d+$/.test(after)) throw badRequest('after', 'must be the seq of a line (an integer ≥ 0)');
        const level = p.get('level');
        const minLevel = level === undefined ? undefined : pino.levels.values[level];
        if (level !== undefined && minLevel === undefined) throw badRequest('level', `must be one of ${Object.keys(pino.levels.values).join(', ')}`);
        const id = req.params['request_id'] ?? '';
        const entry = ring.find(tenant.org_id, id);
        if (!entry) throw new GatewayError('not_found', `no request ${id} among this replica's last ${INSPECTOR_MAX_LIMIT} requests of tenant ${tenant.org_id}`);
        const data = entry.lines?.read({ after: Number(after), limit, minLevel, q: p.get('q'), logger: p.get('logger') }) ?? [];
        sendJson(res, 200, { object: 'list', request_id: id, data, source: PROCESS });
      },
    },
    {
      method: 'GET',
      path: '/api/v1/tenant/requests',
      surface,
      async handler(req, res) {
        const tenant = await credentialTenant(req, res);
        const p = params(req);
        const columns = new Set<string>(DURABLE_FILTERS);
        for (const k of p.keys()) {
          if (!columns.has(k) && !['window', 'limit', 'decision', 'tenant_id'].includes(k)) {
            throw badRequest(k, `unknown filter; filter columns: ${DURABLE_FILTERS.join(', ')}`);
          }
        }
        const window = windowOf(p, '1h');
        const limit = limitOf(p, DURABLE_MAX_LIMIT, 100);
        const decision = p.get('decision');
        if (decision !== undefined && decision !== 'true' && decision !== 'false') throw badRequest('decision', 'must be true or false');
        const reader = storeOrRefuse(deps.reader);
        const filters = [...p].filter(([k]) => columns.has(k));
        req.stages.begin('store_read');
        const found = await reader.list(tenant.org_id, { startMs: Date.now() - window.ms, limit, filters, withDecision: decision === 'true' });
        req.stages.end();
        const data = found.map(({ row, decision: d }) => (d ? { ...row, decision: d } : row));
        sendJson(res, 200, { object: 'list', data, source: DURABLE, window: window.name });
      },
    },
    {
      method: 'GET',
      path: '/api/v1/tenant/request/:request_id',
      surface,
      async handler(req, res) {
        const tenant = await credentialTenant(req, res);
        const reader = storeOrRefuse(deps.reader);
        const id = req.params['request_id'] ?? '';
        req.stages.begin('store_read');
        const found = await reader.one(tenant.org_id, id);
        req.stages.end();
        if (!found) throw new GatewayError('not_found', `no request ${id} of tenant ${tenant.org_id} within the retention`);
        sendJson(res, 200, { request: found.row, decision: found.decision, source: DURABLE });
      },
    },
    {
      method: 'GET',
      path: '/api/v1/usage',
      surface,
      async handler(req, res) {
        const tenant = await credentialTenant(req, res);
        const p = params(req);
        if (p.has('org')) throw badRequest('org', 'the org is the credential\'s own: it is neither a dimension nor a filter');
        const groupBy = (p.get('group_by') ?? 'provider').split(',').map((name): Dimension => {
          if (name === 'org') throw badRequest('group_by', 'the org is the credential\'s own: it is neither a dimension nor a filter');
          const d = dimensionNamed(name);
          if (d === undefined) throw badRequest('group_by', `unknown dimension ${name}; dimensions: ${DIMENSION_NAMES.join(', ')} (cost_center for cost_centre)`);
          return d;
        });
        const window = windowOf(p, '7d');
        const bucketName = p.get('bucket');
        if (bucketName !== undefined && !BUCKETS.includes(bucketName as Bucket)) throw badRequest('bucket', `must be one of ${BUCKETS.join(', ')}`);
        const limit = limitOf(p, USAGE_MAX_LIMIT, 1000);
        const filters: Partial<Record<Dimension, string>> = {};
        for (const [k, v] of p) {
          if (['group_by', 'window', 'bucket', 'limit', 'tenant_id'].includes(k)) continue;
          const d = k === 'key_id' ? 'key' : dimensionNamed(k);
          if (d === undefined) throw badRequest(k, `unknown parameter; filters are dimensions: ${[...DIMENSION_NAMES, ...Object.keys(DIMENSION_ALIASES), 'key_id'].join(', ')}`);
          // a key is checked against the tenant before it filters: another tenant's key is the same 404 as an unknown one
          filters[d] = d === 'key' ? entitlement.key(tenant, v).key.key_id : v;
        }
        const reader = storeOrRefuse(deps.reader);
        req.stages.begin('store_read');
        const data = await reader.usage(tenant.org_id, { groupBy, bucket: bucketName as Bucket | undefined, filters }, window.ms, limit);
        req.stages.end();
        sendJson(res, 200, { object: 'list', data, source: DURABLE, window: window.name, bucket: bucketName ?? null, group_by: groupBy });
      },
    },
  ];
}
