import { GatewayError } from '../errors.js';
import type { GatewayRequest, Route } from '../http/types.js';
import { parseJsonObject } from '../http/validate.js';
import type { Pipeline } from '../pipeline/index.js';
import type { Planner, RouteRow } from '../pipeline/types.js';
import { withQuery } from '../providers/adapter.js';
import { lookupModel } from '../providers/catalog.js';
import { SURFACES } from './index.js';
import { planned } from './planned.js';

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
 * POST /v1/responses: the body goes upstream as received (items, reasoning,
 * store, include, encrypted_content) and the Responses object or its
 * `response.*` stream comes back verbatim, to the model's provider (openai
 * for a name the catalog does not know); a provider that does not host the
 * Responses API is a 400.
 */
const planResponses: Planner = (req, { providers }) => {
  const model = modelOf(req);
  const provider = lookupModel(model)?.provider ?? 'openai';
  return planned(providers.target(provider, { op: 'responses', query: req.query }, req.headers), model, req.body);
};

/** The cloudx forms: the Azure path of the form, the deployment name riding as `model`. */
const planCloudx =
  (azurePath: string): Planner =>
  (req, { providers }) => planned(providers.target('cloudx', { op: 'vendor_path', path: withQuery(azurePath, req.query) }, req.headers), modelOf(req), req.body);

const ROWS: RouteRow[] = [
  { method: 'POST', path: '/v1/responses', surface, plan: planResponses },
  ...CLOUDX_FORMS.map(([path, azurePath]): RouteRow => ({ method: 'POST', path, surface, plan: planCloudx(azurePath) })),
];

export const responsesRoutes = (pipeline: Pipeline): Route[] => pipeline.routes(ROWS);
