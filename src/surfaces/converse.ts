import { GatewayError } from '../errors.js';
import type { GatewayRequest, Route } from '../http/types.js';
import { parseJsonObject } from '../http/validate.js';
import type { Pipeline } from '../pipeline/index.js';
import type { Planner, RouteRow } from '../pipeline/types.js';
import { isAccessKeyPair } from '../providers/cloudy.js';
import { SURFACES } from './index.js';
import { bearerToken, DEV_KEY_PREFIX } from '../http/credentials.js';
import { planned } from './planned.js';

const surface = SURFACES.converse;

/** A non-`gw_` bearer on Authorization: the cloud's API key passed through. */
function bearerVendorKey(req: GatewayRequest): string | undefined {
  const token = bearerToken(req.headers['authorization']);
  return token?.startsWith(DEV_KEY_PREFIX) ? undefined : token;
}

/** An API key beside an access-key pair is ambiguous: refused rather than guessed. */
function refuseKeyBesidePair(req: GatewayRequest): void {
  const bearer = bearerVendorKey(req);
  const explicit = req.headers['x-gw-provider-key'];
  if (bearer === undefined || explicit === undefined || explicit === '') return;
  if (isAccessKeyPair(bearer) !== isAccessKeyPair(explicit)) {
    throw new GatewayError('request_error', 'an API key was sent beside an access-key pair: send one cloudy credential, the API key as a bearer or the pair in x-gw-provider-key');
  }
}

function pathModelId(raw: string): string {
  let id: string;
  try {
    id = decodeURIComponent(raw);
  } catch {
    throw new GatewayError('request_error', 'modelId in the path is not valid percent-encoding', { fields: { field: 'modelId' } });
  }
  // `/cloudy/model/../converse` (or %2e%2e): a dot segment is not a model, and must never reach a vendor path
  if (id === '.' || id === '..') throw new GatewayError('request_error', 'modelId in the path is a dot segment', { fields: { field: 'modelId' } });
  return id;
}

/** The body with `modelId` added as its first member; the caller's bytes after it are untouched. */
function withModelId(body: Buffer, modelId: string): Buffer {
  const open = body.indexOf('{');
  const rest = body.subarray(open + 1);
  const empty = rest.toString('utf8').trim() === '}';
  return Buffer.concat([body.subarray(0, open + 1), Buffer.from(`"modelId":${JSON.stringify(modelId)}${empty ? '' : ','}`), rest]);
}

/**
 * The converse routes. `/cloudy/{method}` reads `modelId` from the body;
 * `/cloudy/model/{modelId}/{method}` from the path, and places it in a body
 * that has none (the one rewrite of a converse body); a body naming another id is a 400.
 */
function planner(stream: boolean, fromPath: boolean): Planner {
  return (req, { providers, model: routed }) => {
    refuseKeyBesidePair(req);
    const parsed = parseJsonObject(req.body);
    const inBody = parsed['modelId'];
    if (inBody !== undefined && (typeof inBody !== 'string' || inBody === '')) {
      throw new GatewayError('request_error', 'modelId: must be a non-empty string', { fields: { field: 'modelId' } });
    }
    let modelId: string;
    let body = req.body;
    if (fromPath) {
      modelId = pathModelId(req.params['modelId'] ?? '');
      if (inBody === undefined) body = withModelId(req.body, modelId);
      else if (inBody !== modelId) {
        throw new GatewayError('request_error', `modelId in the path (${modelId}) and in the body (${inBody}) differ`, { fields: { field: 'modelId' } });
      }
    } else {
      if (inBody === undefined) throw new GatewayError('request_error', 'modelId: required in the body on this route (or use /cloudy/model/{modelId}/…)', { fields: { field: 'modelId' } });
      modelId = inBody;
    }
    // a model the skills routed the call to replaces the one named, in the body too when it names one
    if (routed !== undefined && routed !== modelId) {
      if (inBody !== undefined) body = Buffer.from(JSON.stringify({ ...parsed, modelId: routed }));
      else body = withModelId(req.body, routed);
      modelId = routed;
    }
    return planned(providers.target('cloudy', { op: 'converse', model: modelId, stream }, req.headers), modelId, body);
  };
}

const ROWS: RouteRow[] = (['converse', 'converse-stream'] as const).flatMap((method): RouteRow[] => [
  { method: 'POST', path: `/cloudy/${method}`, surface, plan: planner(method === 'converse-stream', false) },
  { method: 'POST', path: `/cloudy/model/:modelId/${method}`, surface, plan: planner(method === 'converse-stream', true) },
]);

export const converseRoutes = (pipeline: Pipeline): Route[] => pipeline.routes(ROWS);
