import { upstreamQuery } from '../http/query.js';
import type { GatewayRequest, Route } from '../http/types.js';
import type { Location } from '../providers/adapter.js';
import type { Pipeline } from '../pipeline/index.js';
import { SURFACES } from './index.js';

const surface = SURFACES.cloudx;
const PREFIX = '/cloudx/compat';

/**
 * The Azure resource a cloudx call names with `x-gw-azure-endpoint`; the
 * adapter checks it against the allowlist (unless GW_UPSTREAM_CLOUDX replaces
 * every resource's origin). Without the header a stored key's endpoint applies.
 */
export function cloudxLocation(req: GatewayRequest): Location | undefined {
  const endpoint = req.headers['x-gw-azure-endpoint'];
  return endpoint === undefined ? undefined : { endpoint };
}

/** `path?query` as the caller sent it (minus any developer key), for relaying to the resource. */
export const withQuery = (path: string, query: string): string => `${path}${upstreamQuery(query)}`;

const DEPLOYMENT = /^\/openai\/deployments\/([^/]+)\//;

/** The deployment a call addresses: from the path, else a JSON body's `model` (the v1 API), for accounting and policy. */
function deploymentOf(path: string, req: GatewayRequest): string | undefined {
  const m = DEPLOYMENT.exec(path);
  if (m) {
    try {
      return decodeURIComponent(m[1] as string);
    } catch {
      return m[1];
    }
  }
  return req.headers['content-type']?.includes('json') ? modelOfJson(req.body) : undefined;
}

/** The `model` a JSON body names, read for accounting only: a body that is not JSON names none and is still relayed. */
export function modelOfJson(body: Buffer): string | undefined {
  try {
    const model = (JSON.parse(body.toString('utf8')) as { model?: unknown } | null)?.model;
    return typeof model === 'string' ? model : undefined;
  } catch {
    return undefined;
  }
}

/**
 * POST /cloudx/compat/…: any Azure OpenAI path (deployments' chat completions,
 * embeddings, the v1 API) relayed to the resource with path, query and body as sent.
 */
export function cloudxRoutes(pipeline: Pipeline): Route[] {
  return [
    {
      method: 'POST',
      path: `${PREFIX}/*`,
      surface,
      async handler(req, res) {
        const { caller, presented } = pipeline.authenticate(req, surface);
        const path = req.path.slice(PREFIX.length);
        await pipeline.relay(req, res, {
          surface,
          caller,
          presented,
          provider: 'cloudx',
          location: cloudxLocation(req),
          model: deploymentOf(path, req),
          path: withQuery(path, req.query),
          body: req.body,
          // any Azure OpenAI path: speech replies are audio, transcriptions may be text
          opaqueReplies: true,
        });
      },
    },
  ];
}
