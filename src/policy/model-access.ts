import { ADMITTED, type PolicyStage } from '../pipeline/types.js';
import type { ModelAccess } from '../tenancy/model-access.js';

/** 403 model_not_in_scope for a model the org has not enabled. */
export function modelAccessStage(access: ModelAccess): PolicyStage {
  return {
    name: 'model_access',
    admit(call) {
      access.check(call.org.org_id, call.model);
      return ADMITTED;
    },
  };
}
