import type { Route } from '../http/types.js';
import type { Pipeline } from '../pipeline/index.js';
import type { Planner } from '../pipeline/types.js';
import { withQuery } from '../providers/adapter.js';
import { modelOfJson } from './cloudx.js';
import { SURFACES } from './index.js';

const surface = SURFACES.parity_relay;
/** Vendor credential carriers forwarded exactly as presented (x-gw-provider-key is the gateway's own and never goes upstream). */
const PRESERVED = new Set(['x-api-key', 'authorization']);

/**
 * POST /v1/messages, the parity relay: the exact received bytes, on the path
 * and query as received, go to the
 * vendor with every optimization lever off (the surface says so). The vendor
 * credential rides on the header it was presented on (`x-api-key`, or
 * `Authorization: Bearer`); the developer key never leaves the gateway.
 */
const plan: Planner = (req, { providers, presented }) => {
  const carrier = presented.vendorCarrier;
  return {
    ...providers.target('msgvendor', { op: 'vendor_path', path: withQuery(req.path, req.query) }, req.headers),
    model: modelOfJson(req.body),
    body: req.body,
    keepHeaders: carrier !== undefined && PRESERVED.has(carrier) ? [carrier] : [],
  };
};

export const parityRelayRoutes = (pipeline: Pipeline): Route[] => pipeline.routes([{ method: 'POST', path: '/v1/messages', surface, plan }]);
