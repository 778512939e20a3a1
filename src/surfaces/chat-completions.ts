import { GatewayError } from '../errors.js';
import type { Route } from '../http/types.js';
import { parseJsonObject } from '../http/validate.js';
import type { Pipeline } from '../pipeline/index.js';
import { SURFACES } from './index.js';

const surface = SURFACES.chat_completions;

/** POST /v1/chat/completions: the body goes upstream as received. */
export function chatCompletionsRoutes(pipeline: Pipeline): Route[] {
  return [
    {
      method: 'POST',
      path: '/v1/chat/completions',
      surface,
      async handler(req, res) {
        const { caller, presented } = pipeline.authenticate(req, surface);
        const body = parseJsonObject(req.body);
        const model = body['model'];
        if (typeof model !== 'string' || model === '') throw new GatewayError('request_error', 'model: required string', { fields: { field: 'model' } });
        await pipeline.relay(req, res, { surface, caller, presented, provider: 'openai', model, path: '/v1/chat/completions', body: req.body });
      },
    },
  ];
}
