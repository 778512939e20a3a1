import { GatewayError } from '../errors.js';
import type { GatewayRequest, Route } from '../http/types.js';
import { parseJsonObject } from '../http/validate.js';
import type { Pipeline, RelayPlan } from '../pipeline/index.js';
import { isModelPathSegment } from '../providers/adapter.js';
import { vertexLocationOf, vertexModelPath, vertexTarget } from '../providers/genvendor-vertex.js';
import { withQuery } from './cloudx.js';
import { SURFACES } from './index.js';

const surface = SURFACES.messages;

/** The body version Anthropic models on Vertex take in place of the anthropic-version header. */
const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

/** Where a messages-format call goes: the vendor, or Vertex when `x-gw-provider: genvendor_vertex`. */
export type MessagesTarget = Pick<RelayPlan, 'provider' | 'location' | 'model' | 'path' | 'body'>;

function wantsVertex(req: GatewayRequest): boolean {
  const chosen = req.headers['x-gw-provider'];
  if (chosen === undefined || chosen === 'msgvendor') return false;
  if (chosen === 'genvendor_vertex') return true;
  throw new GatewayError('request_error', `x-gw-provider: messages are served by msgvendor or genvendor_vertex, not ${JSON.stringify(chosen)}`, { fields: { field: 'x-gw-provider' } });
}

/**
 * The Vertex form of a messages call (Anthropic's rules for Claude on Vertex):
 * the model moves into the path (`rawPredict`, `streamRawPredict` or the
 * `count-tokens` model), `anthropic_version` joins the body unless the caller
 * set one, and the caller's query (the SDK's `beta=true`) has no meaning there.
 */
function vertexForm(req: GatewayRequest, body: Record<string, unknown>, kind: 'messages' | 'count_tokens'): MessagesTarget {
  const model = body['model'];
  if (typeof model !== 'string' || !isModelPathSegment(model)) {
    throw new GatewayError('request_error', 'model: required, a Vertex model id such as claude-sonnet-4-5@20250929', { fields: { field: 'model' } });
  }
  const rewritten: Record<string, unknown> = { ...body };
  if (kind === 'messages') delete rewritten['model'];
  rewritten['anthropic_version'] ??= VERTEX_ANTHROPIC_VERSION;
  const method = kind === 'count_tokens' ? 'rawPredict' : body['stream'] === true ? 'streamRawPredict' : 'rawPredict';
  const pathModel = kind === 'count_tokens' ? 'count-tokens' : model;
  return {
    provider: 'genvendor_vertex',
    location: vertexLocationOf(req.headers),
    model,
    path: (loc) => {
      const { project, location } = vertexTarget(loc);
      return vertexModelPath(project, location, 'anthropic', pathModel, method);
    },
    body: Buffer.from(JSON.stringify(rewritten)),
  };
}

/**
 * The target of a messages-format call. For the vendor itself the body goes
 * as received, byte for byte; Vertex is the one rewrite.
 */
export function messagesTarget(req: GatewayRequest, vendorPath: string, kind: 'messages' | 'count_tokens'): MessagesTarget {
  const body = parseJsonObject(req.body);
  if (wantsVertex(req)) return vertexForm(req, body, kind);
  const model = body['model'];
  if (typeof model !== 'string' || model === '') throw new GatewayError('request_error', 'model: required string', { fields: { field: 'model' } });
  return { provider: 'msgvendor', model, path: withQuery(vendorPath, req.query), body: req.body };
}

/**
 * POST /msgvendor/v1/messages: thinking blocks and signatures, tools, images
 * and cache_control go upstream as sent; the reply or stream comes back event by event.
 */
export function messagesRoutes(pipeline: Pipeline): Route[] {
  return [
    {
      method: 'POST',
      path: '/msgvendor/v1/messages',
      surface,
      async handler(req, res) {
        const { caller, presented } = pipeline.authenticate(req, surface);
        await pipeline.relay(req, res, { surface, caller, presented, ...messagesTarget(req, '/v1/messages', 'messages') });
      },
    },
  ];
}
