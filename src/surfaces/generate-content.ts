import { GatewayError } from '../errors.js';
import { upstreamQuery } from '../http/query.js';
import type { GatewayRequest, Route } from '../http/types.js';
import type { Pipeline, RelayPlan } from '../pipeline/index.js';
import { isModelPathSegment } from '../providers/adapter.js';
import { vertexLocationOf, vertexModelPath, vertexTarget } from '../providers/genvendor-vertex.js';
import { SURFACES } from './index.js';

const surface = SURFACES.generate_content;

const METHODS = new Set(['generateContent', 'streamGenerateContent']);

/** `{model}:{method}` of the last path segment, percent-decoded (some clients send `%3A`). */
function modelAndMethod(segment: string): { model: string; method: string } {
  let decoded: string;
  try {
    decoded = decodeURIComponent(segment);
  } catch {
    throw new GatewayError('request_error', 'model path segment is not valid percent-encoding');
  }
  const colon = decoded.lastIndexOf(':');
  const model = decoded.slice(0, colon);
  const method = decoded.slice(colon + 1);
  if (colon === -1 || !METHODS.has(method)) {
    throw new GatewayError('not_found', `no such method ${JSON.stringify(method)}: this route serves models/{model}:generateContent and :streamGenerateContent`);
  }
  if (!isModelPathSegment(model)) throw new GatewayError('request_error', `not a model name: ${JSON.stringify(model)}`, { fields: { field: 'model' } });
  return { model, method };
}

/** The vendor key rides on a header upstream, so the query's `key` (the SDK's carrier) never goes. */
const QUERY_CARRIERS = ['key'];

/** Where the call goes: the developer API by default, Vertex on `x-gw-provider: genvendor_vertex`. */
function target(req: GatewayRequest, model: string, method: string, query: string): Pick<RelayPlan, 'provider' | 'location' | 'path'> {
  const provider = req.headers['x-gw-provider'] ?? 'genvendor';
  if (provider === 'genvendor') return { provider, path: `/v1beta/models/${model}:${method}${query}` };
  if (provider !== 'genvendor_vertex') {
    throw new GatewayError('request_error', `x-gw-provider: ${provider} does not serve generate-content (genvendor or genvendor_vertex)`, { fields: { field: 'x-gw-provider' } });
  }
  const location = vertexLocationOf(req.headers);
  return {
    provider,
    location,
    // the caller's headers over the stored key's location, checked before anything is sent
    path: (loc) => {
      const t = vertexTarget(loc);
      return `${vertexModelPath(t.project, t.location, 'google', model, method)}${query}`;
    },
  };
}

/**
 * POST /genvendor/v1beta/models/{model}:generateContent and
 * :streamGenerateContent: the GenerateContentRequest goes upstream byte for
 * byte (thought parts and thoughtSignature included); the reply and its SSE
 * stream come back as the vendor sent them.
 */
export function generateContentRoutes(pipeline: Pipeline): Route[] {
  return [
    {
      method: 'POST',
      path: '/genvendor/v1beta/models/:model',
      surface,
      async handler(req, res) {
        const { caller, presented } = pipeline.authenticate(req, surface);
        const { model, method } = modelAndMethod(req.params['model'] ?? '');
        await pipeline.relay(req, res, { surface, caller, presented, model, body: req.body, ...target(req, model, method, upstreamQuery(req.query, QUERY_CARRIERS)) });
      },
    },
  ];
}
