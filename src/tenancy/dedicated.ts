import { GatewayError } from '../errors.js';
import type { GatewayRequest } from '../http/types.js';
import type { RelayPlan } from '../pipeline/index.js';
import { ADMITTED, type PolicyStage } from '../pipeline/policy.js';
import type { Directory } from './directory.js';

/**
 * GW_DEDICATED_TENANT: a deployment dedicated to one org serves that org and
 * its sub-tenants only; anyone else is 403 forbidden.
 */
export function dedicatedTenantStage(tenant: string, directory: Directory): PolicyStage {
  return {
    name: 'dedicated_tenant',
    admit(_req: GatewayRequest, plan: RelayPlan) {
      if (directory.isWithin(plan.caller.org.org_id, tenant)) return ADMITTED;
      throw new GatewayError('forbidden', 'this deployment is dedicated to another tenant');
    },
  };
}
