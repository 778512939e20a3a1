import type { Route } from '../http/types.js';
import type { Pipeline } from '../pipeline/index.js';
import { modelOfJson, withQuery } from './cloudx.js';
import { SURFACES } from './index.js';

const surface = SURFACES.parity_relay;
/** Vendor credential carriers forwarded exactly as presented (x-gw-provider-key is the gateway's own and never goes upstream). */
const PRESERVED = new Set(['x-api-key', 'authorization']);

/**
 * POST /v1/messages, the parity relay: the exact received bytes go to the
 * vendor with every optimization lever off (the surface says so). The vendor
 * credential rides on the header it was presented on (`x-api-key`, or
 * `Authorization: Bearer`); the developer key never leaves the gateway.
 */
export function parityRelayRoutes(pipeline: Pipeline): Route[] {
  return [
    {
      method: 'POST',
      path: '/v1/messages',
      surface,
      async handler(req, res) {
        const { caller, presented } = pipeline.authenticate(req, surface);
        const carrier = presented.vendorCarrier;
        await pipeline.relay(req, res, {
          surface,
          caller,
          presented,
          provider: 'msgvendor',
          model: modelOfJson(req.body),
          path: withQuery('/v1/messages', req.query),
          body: req.body,
          keepHeaders: carrier !== undefined && PRESERVED.has(carrier) ? [carrier] : [],
        });
      },
    },
  ];
}
