import { GatewayError } from '../errors.js';
import type { GatewayRequest, Route } from '../http/types.js';
import { peekTopLevelString } from '../http/json-peek.js';
import { parseJsonObject } from '../http/validate.js';
import type { Presented } from '../http/credentials.js';
import type { Pipeline } from '../pipeline/index.js';
import type { Planner } from '../pipeline/types.js';
import type { Operation } from '../providers/adapter.js';
import { lookupModel } from '../providers/catalog.js';
import { JsonText } from '../translate/chat/body-writer.js';
import { chatTranslator } from '../translate/index.js';
import type { ChatRequest, ReplyContext } from '../translate/types.js';
import { SURFACES } from './index.js';
import { planned } from './planned.js';

const surface = SURFACES.chat_completions;

/** the translator to the model's own vendor; none for OpenAI's models and names the catalog does not know */
const translatorFor = (model: string) => {
  const entry = lookupModel(model);
  return entry && chatTranslator(entry.provider);
};

function replyContext(req: GatewayRequest, body: ChatRequest): ReplyContext {
  const options = body['stream_options'];
  return {
    model: body.model,
    created: Math.floor(Date.now() / 1000),
    fallbackId: `chatcmpl-${req.id}`,
    includeUsage: typeof options === 'object' && options !== null && (options as Record<string, unknown>)['include_usage'] === true,
  };
}

/**
 * The OpenAI SDK has one place for a key: a vendor key it carries on
 * `Authorization: Bearer` is that vendor's API key, not an OAuth token.
 */
export const asApiKey = (presented: Presented): Presented => (presented.vendorCarrier === 'authorization' ? { ...presented, vendorCarrier: 'x-gw-provider-key' } : presented);

/**
 * POST /v1/chat/completions. The catalog names the model's provider (a name
 * it does not know, such as a fine-tune, is openai's). For openai and the
 * operator's self-hosted servers the body goes upstream as received; for another vendor it is translated to that
 * vendor's format and the reply, streamed or whole, translated back.
 */
const plan: Planner = (req, { providers, presented }) => {
  // an OpenAI model needs only its name, so its body is not parsed at all; a translated call needs it whole
  const peeked = peekTopLevelString(req.body, 'model');
  const body = typeof peeked === 'string' && peeked !== '' && !translatorFor(peeked) ? undefined : parseJsonObject(req.body);
  const model = body ? body['model'] : peeked;
  if (typeof model !== 'string' || model === '') throw new GatewayError('request_error', 'model: required string', { fields: { field: 'model' } });
  const entry = lookupModel(model);
  const translate = translatorFor(model);
  // `auto` leaves the model to model_routing: planned as OpenAI's until a routing stage names one, and sent nowhere unless one does
  // (the call names no model meanwhile: admission has none to judge, the routed one is judged when the call is planned again)
  if (model === AUTO && !entry) return { ...providers.target('openai', CHAT, req.headers), model: undefined, body: req.body, unrouted: new GatewayError('onboarding_incomplete', NO_MODEL) };
  // untranslated: OpenAI's models, names the catalog does not know, and self-hosted models (the same wire format)
  if (!body || !translate || !entry) return planned(providers.target(entry?.provider ?? 'openai', CHAT, req.headers), model, req.body);
  const chat = body as ChatRequest;
  const call = translate(chat, replyContext(req, chat), entry, new JsonText(req.body.length));
  const target = providers.target(entry.provider, call.operation, req.headers);
  // one literal (planned.ts says why not a spread of the target)
  return { provider: target.provider, location: target.location, path: target.path, model, body: call.body, headers: call.headers, reply: call.reply, presented: asApiKey(presented) };
};

const CHAT: Operation = { op: 'chat_completions' };
const AUTO = 'auto';
const NO_MODEL = 'model "auto": no model was chosen (model_routing is off for this key, or found no allowed, reachable model)';

export const chatCompletionsRoutes = (pipeline: Pipeline): Route[] => pipeline.routes([{ method: 'POST', path: '/v1/chat/completions', surface, plan }]);
