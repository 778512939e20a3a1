import { GatewayError } from '../errors.js';
import { ADMITTED, type PolicyStage } from '../pipeline/types.js';
import { namedRegion, parseAllowedRegions, upstreamRegion } from '../tenancy/residency.js';

/** HTTP 451 Unavailable For Legal Reasons: the refusal of a data-residency rule. */
const RESIDENCY_STATUS = 451;

/**
 * Data residency: a call whose upstream region is outside GW_ALLOWED_REGIONS
 * is 451 forbidden before anything is sent, whether the region came with
 * the call or from a stored key.
 */
export function residencyStage(allowedRegions: string): PolicyStage {
  const allowed = parseAllowedRegions(allowedRegions);
  const check = (region: string): void => {
    if (allowed(region)) return;
    throw new GatewayError('forbidden', `upstream region ${region} is outside this deployment's allowed regions (${allowedRegions})`, { status: RESIDENCY_STATUS });
  };
  // a region the caller names is refused before any stored-key lookup; naming none decides nothing yet
  const checkNamed: NonNullable<PolicyStage['candidate']> = (call) => {
    const region = namedRegion(call.location);
    if (region !== undefined) check(region);
  };
  return {
    name: 'residency',
    admit(call) {
      checkNamed(call);
      return ADMITTED;
    },
    candidate: checkNamed,
    // the resolved location (provider default, stored key, caller) decides, an unnamed region counting as global
    located: (_call, location) => check(upstreamRegion(location)),
  };
}
