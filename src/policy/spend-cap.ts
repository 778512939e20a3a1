import { ADMITTED, type Admission, type PolicyStage } from '../pipeline/types.js';
import type { Reservation, SpendCaps } from '../tenancy/spend-cap.js';

const admission = (r: Reservation | undefined): Admission => r ?? ADMITTED;

/**
 * Metering: the call's worst case reserved against the org's spend cap, on
 * the body the skills produced, settled to the real cost at accounting.
 */
export function spendCapStage(caps: SpendCaps): PolicyStage {
  return {
    name: 'spend_cap',
    admit(call) {
      const reserved = caps.admit({ orgId: call.org.org_id, provider: call.provider, model: call.model, body: call.body });
      return reserved === undefined ? ADMITTED : reserved.then(admission);
    },
  };
}
