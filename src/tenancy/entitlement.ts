import { GatewayError } from '../errors.js';
import type { GatewayRequest } from '../http/types.js';
import { parseJsonObject } from '../http/validate.js';
import { bearerToken, DEV_KEY_PREFIX } from '../http/credentials.js';
import { queryParam } from '../http/query.js';
import type { Caller } from './types.js';
import { refuseUnlessServed } from './dedicated.js';
import type { Directory } from './directory.js';
import type { IdpIdentity, IdpVerifier } from './idp.js';
import { secretEquals } from './secrets.js';
import type { DevKey, Org } from './types.js';

/** Who is calling a configuration, skill or telemetry route. */
export type Principal =
  | { kind: 'dev_key'; caller: Caller }
  | { kind: 'idp'; identity: IdpIdentity }
  | { kind: 'deployment'; credential: 'config_secret' | 'admin_key' };

export interface EntitlementOptions {
  directory: Directory;
  configSecret: string | undefined;
  adminKey: string | undefined;
  idp: IdpVerifier | undefined;
  /** GW_DEDICATED_TENANT: only that org and its sub-tenants are served */
  dedicatedTenant?: string;
}

export interface IdentifyOptions {
  /**
   * Telemetry and skill routes also accept the deployment's config secret or
   * admin key naming the tenant; self-service routes take only an org's
   * own identity, so a tenant configures only itself.
   */
  deploymentSecrets: boolean;
}


const unknownCredential = () => new GatewayError('invalid_developer_key', 'developer key missing, invalid, revoked or expired');

/**
 * One rule for every route that configures or reads a tenant (docs/api.md,
 * Who may call the configuration and skill routes): the credential must be entitled to the tenant it names.
 * An org key acts on its own org only; an IdP token on the orgs its groups map
 * to; the config secret or admin key on any tenant it names explicitly. A key
 * named by id is resolved to its owner and checked against the tenant before
 * anything says whether it exists, so an unknown id and another tenant's id
 * answer alike.
 */
export class Entitlement {
  constructor(private readonly opts: EntitlementOptions) {}

  /** 401 when nothing presented resolves (invalid_developer_key, or idp_authentication_error for a refused IdP token). */
  async identify(req: GatewayRequest, options: IdentifyOptions): Promise<Principal> {
    const token = bearerToken(req.headers['authorization']);
    const gwKey = req.headers['x-gw-key'];
    const devKey = gwKey?.startsWith(DEV_KEY_PREFIX) ? gwKey : token?.startsWith(DEV_KEY_PREFIX) ? token : undefined;
    if (devKey !== undefined) {
      const caller = this.opts.directory.authenticate(devKey);
      if (!caller) throw unknownCredential();
      // a foreign org's key is refused before its body is even read
      this.refuseUnlessServed(caller.org);
      return { kind: 'dev_key', caller };
    }
    if (options.deploymentSecrets) {
      const presented = req.headers['x-gw-config-secret'] ?? req.headers['x-gw-admin-key'] ?? token;
      if (presented !== undefined) {
        if (this.matches(presented, this.opts.configSecret)) return { kind: 'deployment', credential: 'config_secret' };
        if (this.matches(presented, this.opts.adminKey)) return { kind: 'deployment', credential: 'admin_key' };
        if (presented !== token) throw unknownCredential();
      }
    }
    if (token !== undefined && this.opts.idp) return { kind: 'idp', identity: await this.opts.idp.verify(token) };
    throw unknownCredential();
  }

  /**
   * The prologue of a tenant-scoped POST route: who calls (401 first), the JSON
   * body, and the tenant it acts on (403 for another tenant).
   */
  async forJsonBody(req: GatewayRequest, options: IdentifyOptions): Promise<{ principal: Principal; body: Record<string, unknown>; tenant: Org }> {
    const principal = await this.identify(req, options);
    const body = parseJsonObject(req.body);
    return { principal, body, tenant: this.tenant(principal, namedTenants(req, body)) };
  }

  /**
   * The org a request acts on, from the tenants it names (path org_id, query or
   * body tenant_id). Naming another tenant is 403 (`forbidden`, or
   * idp_forbidden_error for an IdP token); the deployment's secrets must name one.
   * On a dedicated deployment an org outside its tenant is 403 forbidden.
   */
  tenant(principal: Principal, named: ReadonlyArray<string | undefined>): Org {
    const org = this.namedOrg(principal, named);
    this.refuseUnlessServed(org);
    return org;
  }

  private namedOrg(principal: Principal, named: ReadonlyArray<string | undefined>): Org {
    const names = [...new Set(named.filter((n): n is string => n !== undefined))];
    if (names.length > 1) throw new GatewayError('forbidden', `the request names more than one tenant (${names.join(', ')})`);
    const [name] = names;
    const { directory } = this.opts;
    switch (principal.kind) {
      case 'dev_key': {
        const own = principal.caller.org;
        if (name !== undefined && name !== own.org_id) throw new GatewayError('forbidden', `this developer key belongs to org ${own.org_id} and cannot act on tenant ${name}`);
        return own;
      }
      case 'idp': {
        const { orgs } = principal.identity;
        if (name === undefined && orgs.length > 1) {
          throw new GatewayError('request_error', `this identity maps to several orgs (${orgs.join(', ')}): name one with tenant_id`, { fields: { field: 'tenant_id' } });
        }
        const orgId = name ?? (orgs[0] as string);
        const org = orgs.includes(orgId) ? directory.org(orgId) : undefined;
        if (!org) throw new GatewayError('idp_forbidden_error', `this identity has no access to tenant ${orgId}`);
        return org;
      }
      case 'deployment': {
        if (name === undefined) throw new GatewayError('request_error', 'name the tenant (org_id or tenant_id) when using the deployment config secret or admin key', { fields: { field: 'tenant_id' } });
        const org = directory.org(name);
        if (!org) throw new GatewayError('not_found', `no tenant ${name}`);
        return org;
      }
    }
  }

  /**
   * A developer key named by key_id or dev_key_id, which must belong to
   * `tenant` or one of its sub-tenants; otherwise 404 with the same answer
   * whether the id is unknown or another tenant's.
   */
  key(tenant: Org, ref: string): { key: DevKey; owner: Org } {
    const { directory } = this.opts;
    const key = directory.key(ref);
    const owner = key && directory.isWithin(key.org_id, tenant.org_id) ? directory.org(key.org_id) : undefined;
    if (!key || !owner) throw new GatewayError('not_found', `no key ${ref} in org ${tenant.org_id} or its sub-tenants`);
    return { key, owner };
  }

  /** 403 forbidden on a dedicated deployment for an org outside its tenant, whoever presents it */
  private refuseUnlessServed(org: Org): void {
    if (this.opts.dedicatedTenant !== undefined) refuseUnlessServed(this.opts.dedicatedTenant, this.opts.directory, org.org_id);
  }

  private matches(presented: string, secret: string | undefined): boolean {
    return secret !== undefined && secretEquals(presented, secret);
  }
}

/** The tenants a request names: the path's org_id, the query's and the body's tenant_id. */
export function namedTenants(req: GatewayRequest, body?: { tenant_id?: unknown }): Array<string | undefined> {
  const fromBody = body?.tenant_id;
  if (fromBody !== undefined && typeof fromBody !== 'string') throw new GatewayError('request_error', 'tenant_id: must be a string', { fields: { field: 'tenant_id' } });
  return [req.params['org_id'], queryParam(req.query, 'tenant_id'), fromBody];
}
