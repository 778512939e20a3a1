import { GatewayError } from '../errors.js';
import type { GatewayRequest } from '../http/types.js';
import type { Presented } from '../http/credentials.js';
import type { ProviderId } from '../providers/types.js';
import type { StoredCredential, StoredKeys } from '../tenancy/vendor-keys.js';

/**
 * Pass-through beats stored; neither is 402 onboarding_incomplete. Answers
 * synchronously unless the stored-key lookup has to wait on the store.
 */
export function resolveCredential(
  stored: StoredKeys,
  req: GatewayRequest,
  orgId: string,
  presented: Presented,
  provider: ProviderId,
): StoredCredential | Promise<StoredCredential> {
  const { vendorKey, vendorCarrier } = presented;
  if (vendorKey !== undefined) {
    return {
      credential: { secret: vendorKey, scheme: vendorCarrier === 'authorization' ? 'bearer' : 'api_key', source: 'pass_through' },
      location: {},
    };
  }
  req.stages.begin('byok_store');
  const found = stored.find(orgId, provider, req.stages);
  if (found instanceof Promise) return found.then((f) => storedOr402(f, req, provider));
  return storedOr402(found, req, provider);
}

function storedOr402(found: StoredCredential | undefined, req: GatewayRequest, provider: ProviderId): StoredCredential {
  req.stages.end();
  if (found) return found;
  throw new GatewayError('onboarding_incomplete', `no ${provider} credential: send one with the request or store one with /api/v1/vendor_key/create`);
}
