import { ADMITTED, type PolicyStage } from '../pipeline/types.js';
import type { ModelAccess } from '../tenancy/model-access.js';

/** 403 model_not_in_scope for a model the org has not enabled, whether asked for first or as a fallback. */
export function modelAccessStage(access: ModelAccess): PolicyStage {
  const check: NonNullable<PolicyStage['candidate']> = (call) => access.check(call.org.org_id, call.model);
  return {
    name: 'model_access',
    admit(call) {
      check(call);
      return ADMITTED;
    },
    candidate: check,
  };
}
