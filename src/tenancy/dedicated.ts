import { GatewayError } from '../errors.js';
import type { Directory } from './directory.js';

/**
 * GW_DEDICATED_TENANT: a deployment dedicated to one org serves that org and
 * its sub-tenants only; anyone else is 403 forbidden, on the relays (the
 * policy stage, src/policy/dedicated.ts) and on every configuration, skill and telemetry route
 * (Entitlement). The admin routes stay the deployment admin's.
 */
export function refuseUnlessServed(tenant: string, directory: Directory, orgId: string): void {
  if (!directory.isWithin(orgId, tenant)) throw new GatewayError('forbidden', 'this deployment is dedicated to another tenant');
}
