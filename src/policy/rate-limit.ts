import { ADMITTED, type Admission, type PolicyStage } from '../pipeline/types.js';
import type { RateLimiter } from '../tenancy/rate-limit.js';

const admitted = (): Admission => ADMITTED;

/** The org's requests-per-second cap: 429 rate_limited past it; answered synchronously while the replica's batch lasts. */
export function rateLimitStage(limiter: RateLimiter): PolicyStage {
  return {
    name: 'rate_limit',
    admit(call) {
      const waited = limiter.admit(call.org.org_id, call.org.rps_cap);
      return waited instanceof Promise ? waited.then(admitted) : ADMITTED;
    },
  };
}
