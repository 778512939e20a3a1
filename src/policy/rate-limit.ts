import { admittedWithRemaining, type PolicyStage } from '../pipeline/types.js';
import type { RateLimiter } from '../tenancy/rate-limit.js';

/** The org's requests-per-second cap: 429 rate_limited past it; answered synchronously while the replica's batch lasts. */
export function rateLimitStage(limiter: RateLimiter): PolicyStage {
  return {
    name: 'rate_limit',
    admit(call) {
      const remaining = limiter.admit(call.org.org_id, call.org.rps_cap);
      return remaining instanceof Promise ? remaining.then(admittedWithRemaining) : admittedWithRemaining(remaining);
    },
  };
}
