import { ADMITTED, type PolicyStage } from '../pipeline/types.js';
import { refuseUnlessServed } from '../tenancy/dedicated.js';
import type { Directory } from '../tenancy/directory.js';

/** GW_DEDICATED_TENANT: only the dedicated org and its sub-tenants are relayed. */
export function dedicatedTenantStage(tenant: string, directory: Directory): PolicyStage {
  return {
    name: 'dedicated_tenant',
    admit(call) {
      refuseUnlessServed(tenant, directory, call.org.org_id);
      return ADMITTED;
    },
  };
}
