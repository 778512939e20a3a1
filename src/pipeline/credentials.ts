import { GatewayError } from '../errors.js';
import type { StageClock } from '../http/stages.js';
import type { GatewayRequest } from '../http/types.js';
import type { Location } from '../providers/adapter.js';
import type { ProviderCredential, ProviderId } from '../providers/types.js';
import type { Caller, Presented } from './auth.js';

/** A provider key stored for an org, decrypted, with where it points. */
export interface StoredCredential {
  credential: ProviderCredential;
  location: Location;
}

/** Stored provider keys as the pipeline sees them (implemented in tenancy/). */
export interface StoredKeys {
  /** may wait on the store; bounded by GW_BYOK_STORE_TIMEOUT_S inside, a timeout naming the running stage from `stages` */
  find(orgId: string, provider: ProviderId, stages: StageClock): Promise<StoredCredential | undefined> | StoredCredential | undefined;
}

/**
 * Pass-through beats stored; neither is 402 onboarding_incomplete. Answers
 * synchronously unless the stored-key lookup has to wait on the store.
 */
export function resolveCredential(
  stored: StoredKeys,
  req: GatewayRequest,
  caller: Caller,
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
  const found = stored.find(caller.org.org_id, provider, req.stages);
  if (found instanceof Promise) return found.then((f) => storedOr402(f, req, provider));
  return storedOr402(found, req, provider);
}

function storedOr402(found: StoredCredential | undefined, req: GatewayRequest, provider: ProviderId): StoredCredential {
  req.stages.end();
  if (found) return found;
  throw new GatewayError('onboarding_incomplete', `no ${provider} credential: send one with the request or store one with /api/v1/vendor_key/create`);
}
