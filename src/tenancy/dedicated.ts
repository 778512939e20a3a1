import { GatewayError } from '../errors.js';
import type { GatewayRequest } from '../http/types.js';
import type { RelayPlan } from '../pipeline/index.js';
import { ADMITTED, type PolicyStage } from '../pipeline/policy.js';
import type { Directory } from './directory.js';

/**
 * GW_DEDICATED_TENANT: a deployment dedicated to one org serves that org and
 * its sub-tenants only; anyone else is 403 forbidden, on the relays (the
 * policy stage below) and on every configuration, skill and telemetry route
 * (Entitlement). The admin routes stay the deployment admin's.
 */
export function refuseUnlessServed(tenant: string, directory: Directory, orgId: string): void {
  if (!directory.isWithin(orgId, tenant)) throw new GatewayError('forbidden', 'this deployment is dedicated to another tenant');
}

export function dedicatedTenantStage(tenant: string, directory: Directory): PolicyStage {
  return {
    name: 'dedicated_tenant',
    admit(_req: GatewayRequest, plan: RelayPlan) {
      refuseUnlessServed(tenant, directory, plan.caller.org.org_id);
      return ADMITTED;
    },
  };
}
