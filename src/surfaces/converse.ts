import { GatewayError } from '../errors.js';
import type { GatewayRequest, Handler, Route } from '../http/types.js';
import { parseJsonObject } from '../http/validate.js';
import type { Pipeline } from '../pipeline/index.js';
import type { Location } from '../providers/adapter.js';
import { encodeModelId, isAccessKeyPair, isAwsRegion } from '../providers/cloudy.js';
import { SURFACES } from './index.js';
import { bearerToken, DEV_KEY_PREFIX } from '../http/credentials.js';

const surface = SURFACES.converse;

type Method = 'converse' | 'converse-stream';

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
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new GatewayError('request_error', 'modelId in the path is not valid percent-encoding', { fields: { field: 'modelId' } });
  }
}

/** The body with `modelId` added as its first member; the caller's bytes after it are untouched. */
function withModelId(body: Buffer, modelId: string): Buffer {
  const open = body.indexOf('{');
  const rest = body.subarray(open + 1);
  const empty = rest.toString('utf8').trim() === '}';
  return Buffer.concat([body.subarray(0, open + 1), Buffer.from(`"modelId":${JSON.stringify(modelId)}${empty ? '' : ','}`), rest]);
}

function region(req: GatewayRequest): Location {
  const r = req.headers['x-gw-aws-region'];
  if (r === undefined) return {};
  if (!isAwsRegion(r)) throw new GatewayError('request_error', `not an AWS region: ${JSON.stringify(r)}`, { fields: { field: 'x-gw-aws-region' } });
  return { region: r };
}

/** A stored key's region is checked like the caller's, before anything is sent. */
const vendorPath = (modelId: string, method: Method) => (loc: Location) => {
  if (loc.region !== undefined && !isAwsRegion(loc.region)) throw new GatewayError('request_error', `not an AWS region: ${JSON.stringify(loc.region)}`);
  return `/model/${encodeModelId(modelId)}/${method}`;
};

/**
 * The converse routes. `/cloudy/{method}` reads `modelId` from the body;
 * `/cloudy/model/{modelId}/{method}` from the path, and places it in a body
 * that has none (the one rewrite of a converse body); a body naming another id is a 400.
 */
function handler(pipeline: Pipeline, method: Method, fromPath: boolean): Handler {
  return async (req, res) => {
    const { caller, presented } = pipeline.authenticate(req, surface);
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
    await pipeline.relay(req, res, { surface, caller, presented, provider: 'cloudy', model: modelId, location: region(req), path: vendorPath(modelId, method), body });
  };
}

export function converseRoutes(pipeline: Pipeline): Route[] {
  return (['converse', 'converse-stream'] as const).flatMap((method): Route[] => [
    { method: 'POST', path: `/cloudy/${method}`, surface, handler: handler(pipeline, method, false) },
    { method: 'POST', path: `/cloudy/model/:modelId/${method}`, surface, handler: handler(pipeline, method, true) },
  ]);
}
