import { GatewayError } from '../errors.js';
import type { GatewayRequest, Route } from '../http/types.js';
import { parseJsonObject } from '../http/validate.js';
import type { Pipeline } from '../pipeline/index.js';
import type { Plan, PlanInput, Planner } from '../pipeline/types.js';
import { SURFACES } from './index.js';

const surface = SURFACES.messages;

/**
 * A messages-format call (a message, or its token count): to the vendor,
 * or to another host of the Messages API named by `x-gw-provider` (Vertex).
 * For the vendor itself the body goes as received, byte for byte; a host
 * whose rules differ (Claude on Vertex) gets the body its provider builds.
 */
export function messagesPlan(req: GatewayRequest, { providers }: PlanInput, op: 'messages' | 'count_tokens'): Plan {
  const parsed = parseJsonObject(req.body);
  const model = parsed['model'];
  if (typeof model !== 'string' || model === '') throw new GatewayError('request_error', 'model: required string', { fields: { field: 'model' } });
  const operation = op === 'messages' ? { op, model, stream: parsed['stream'] === true, query: req.query, parsed } : { op, model, query: req.query, parsed };
  const target = providers.chosen(operation, req.headers, 'msgvendor');
  return { ...target, model, body: target.body ?? req.body };
}

const plan: Planner = (req, input) => messagesPlan(req, input, 'messages');

/**
 * POST /msgvendor/v1/messages: thinking blocks and signatures, tools, images
 * and cache_control go upstream as sent; the reply or stream comes back event by event.
 */
export const messagesRoutes = (pipeline: Pipeline): Route[] => pipeline.routes([{ method: 'POST', path: '/msgvendor/v1/messages', surface, plan }]);
