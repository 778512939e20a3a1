import { GatewayError } from '../errors.js';
import type { GatewayRequest, ResponseSink, Route } from '../http/types.js';
import { parseJsonObject } from '../http/validate.js';
import type { Pipeline } from '../pipeline/index.js';
import { lookupModel } from '../providers/catalog.js';
import { cloudxLocation, withQuery } from './cloudx.js';
import { SURFACES } from './index.js';

const surface = SURFACES.responses;

/** The cloudx forms of the Responses API and the Azure path each relays to. */
const CLOUDX_FORMS: ReadonlyArray<[route: string, azurePath: string]> = [
  ['/cloudx/compat/v1/responses', '/openai/v1/responses'],
  ['/compat/v1/responses', '/openai/v1/responses'],
  ['/cloudx/compat/responses', '/openai/responses'],
  // where the AzureOpenAI and OpenAI SDKs land when given `{base}/cloudx/compat` as the resource endpoint
  ['/cloudx/compat/openai/responses', '/openai/responses'],
  ['/cloudx/compat/openai/v1/responses', '/openai/v1/responses'],
];

/** `model` of a Responses body; it may be absent when a stored prompt names it. */
function modelOf(req: GatewayRequest): string | undefined {
  const model = parseJsonObject(req.body)['model'];
  if (model === undefined) return undefined;
  if (typeof model !== 'string' || model === '') throw new GatewayError('request_error', 'model: must be a non-empty string', { fields: { field: 'model' } });
  return model;
}

/**
 * POST /v1/responses and the cloudx forms: the body goes upstream as received
 * (items, reasoning, store, include, encrypted_content) and the Responses
 * object or its `response.*` stream comes back verbatim. Only the openai and
 * cloudx provider kinds host this API.
 */
export function responsesRoutes(pipeline: Pipeline): Route[] {
  const openaiRoute: Route = {
    method: 'POST',
    path: '/v1/responses',
    surface,
    async handler(req: GatewayRequest, res: ResponseSink) {
      const { caller, presented } = pipeline.authenticate(req, surface);
      const model = modelOf(req);
      const provider = lookupModel(model)?.provider ?? 'openai';
      if (provider === 'cloudx') {
        return pipeline.relay(req, res, { surface, caller, presented, provider, location: cloudxLocation(req), model, path: withQuery('/openai/v1/responses', req.query), body: req.body });
      }
      if (provider !== 'openai') {
        throw new GatewayError('request_error', `model ${model ?? ''} is served by ${provider}; the Responses API is hosted only by openai and cloudx`, { fields: { field: 'model' } });
      }
      return pipeline.relay(req, res, { surface, caller, presented, provider, model, path: withQuery('/v1/responses', req.query), body: req.body });
    },
  };
  const cloudxRoutes = CLOUDX_FORMS.map(
    ([path, azurePath]): Route => ({
      method: 'POST',
      path,
      surface,
      async handler(req, res) {
        const { caller, presented } = pipeline.authenticate(req, surface);
        // the deployment name rides as `model`
        const model = modelOf(req);
        await pipeline.relay(req, res, { surface, caller, presented, provider: 'cloudx', location: cloudxLocation(req), model, path: withQuery(azurePath, req.query), body: req.body });
      },
    }),
  );
  return [openaiRoute, ...cloudxRoutes];
}
