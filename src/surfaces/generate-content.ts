import { GatewayError } from '../errors.js';
import { upstreamQuery } from '../http/query.js';
import type { Route } from '../http/types.js';
import type { Pipeline } from '../pipeline/index.js';
import type { Planner } from '../pipeline/types.js';
import { SURFACES } from './index.js';
import { planned } from './planned.js';

const surface = SURFACES.generate_content;

const METHODS: Readonly<Record<string, boolean>> = { generateContent: false, streamGenerateContent: true };

/** `{model}:{method}` of the last path segment, percent-decoded (some clients send `%3A`). */
function modelAndMethod(segment: string): { model: string; stream: boolean } {
  let decoded: string;
  try {
    decoded = decodeURIComponent(segment);
  } catch {
    throw new GatewayError('request_error', 'model path segment is not valid percent-encoding');
  }
  const colon = decoded.lastIndexOf(':');
  const method = decoded.slice(colon + 1);
  const stream = colon === -1 ? undefined : METHODS[method];
  if (stream === undefined) {
    throw new GatewayError('not_found', `no such method ${JSON.stringify(method)}: this route serves models/{model}:generateContent and :streamGenerateContent`);
  }
  return { model: decoded.slice(0, colon), stream };
}

/** The vendor key rides on a header upstream, so the query's `key` (the SDK's carrier) never goes. */
const QUERY_CARRIERS = ['key'];

/**
 * POST /genvendor/v1beta/models/{model}:generateContent and
 * :streamGenerateContent: the GenerateContentRequest goes upstream byte for
 * byte (thought parts and thoughtSignature included) to the developer API,
 * or to Vertex on `x-gw-provider: genvendor_vertex`; the reply and its SSE
 * stream come back as the vendor sent them.
 */
const plan: Planner = (req, { providers, model: routed }) => {
  const named = modelAndMethod(req.params['model'] ?? '');
  // a model the skills routed the call to replaces the path's
  const model = routed ?? named.model;
  const { stream } = named;
  return planned(providers.chosen({ op: 'generate_content', model, stream, query: upstreamQuery(req.query, QUERY_CARRIERS) }, req.headers, 'genvendor'), model, req.body);
};

export const generateContentRoutes = (pipeline: Pipeline): Route[] => pipeline.routes([{ method: 'POST', path: '/genvendor/v1beta/models/:model', surface, plan }]);
