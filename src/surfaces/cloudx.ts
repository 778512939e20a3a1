import type { GatewayRequest, Route } from '../http/types.js';
import type { Pipeline } from '../pipeline/index.js';
import type { Planner } from '../pipeline/types.js';
import { withQuery } from '../providers/adapter.js';
import { SURFACES } from './index.js';

const surface = SURFACES.cloudx;
const PREFIX = '/cloudx/compat';

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
const plan: Planner = (req, { providers }) => {
  const path = req.path.slice(PREFIX.length);
  return {
    ...providers.target('cloudx', { op: 'vendor_path', path: withQuery(path, req.query) }, req.headers),
    model: deploymentOf(path, req),
    body: req.body,
    // any Azure OpenAI path: speech replies are audio, transcriptions may be text
    opaqueReplies: true,
  };
};

export const cloudxRoutes = (pipeline: Pipeline): Route[] => pipeline.routes([{ method: 'POST', path: `${PREFIX}/*`, surface, plan }]);
