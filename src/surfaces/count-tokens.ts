import type { Route } from '../http/types.js';
import { countTokens } from '../providers/usage/tokenizer.js';
import type { Pipeline } from '../pipeline/index.js';
import type { Planner } from '../pipeline/types.js';
import { SURFACES } from './index.js';
import { messagesPlan } from './messages.js';

const surface = SURFACES.count_tokens;
const SOURCE = 'x-gw-token-count-source';

/** Anthropic's documented ceiling for one image (about width × height / 750, capped near 1,600). */
const IMAGE_TOKENS = 1_600;
/** Role markers and block framing per message, and the request's own framing. */
const PER_MESSAGE = 4;
const PER_REQUEST = 8;

const tokens = (text: string): number => (text === '' ? 0 : countTokens(text));

/** Tokens of one content value: a string, or an array of blocks. */
function contentTokens(content: unknown): number {
  if (typeof content === 'string') return tokens(content);
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const block of content as Array<Record<string, unknown>>) {
    if (typeof block !== 'object' || block === null) continue;
    switch (block['type']) {
      case 'text':
        n += tokens(String(block['text'] ?? ''));
        break;
      case 'thinking':
        n += tokens(String(block['thinking'] ?? ''));
        break;
      case 'tool_use':
        n += tokens(String(block['name'] ?? '')) + tokens(JSON.stringify(block['input'] ?? {}));
        break;
      case 'tool_result':
        n += contentTokens(block['content']);
        break;
      case 'image':
      case 'document':
        n += IMAGE_TOKENS;
        break;
      default:
        n += tokens(JSON.stringify(block));
    }
  }
  return n;
}

/**
 * A local estimate of a messages request's input tokens, for when no vendor
 * credential exists to ask the vendor: a BPE tokenizer over the text the
 * model would read (system, messages, tool definitions), not a character ratio.
 */
function estimateInputTokens(body: Record<string, unknown>): number {
  let n = PER_REQUEST + contentTokens(body['system']);
  const messages = Array.isArray(body['messages']) ? (body['messages'] as Array<Record<string, unknown>>) : [];
  for (const m of messages) n += PER_MESSAGE + contentTokens(m?.['content']);
  if (Array.isArray(body['tools'])) n += tokens(JSON.stringify(body['tools']));
  return n;
}

/**
 * POST /msgvendor/v1/messages/count_tokens: relayed to the vendor (or Vertex)
 * with the call's credential; only when no vendor credential exists at all,
 * pass-through or stored, a local estimate answers, marked as such.
 */
const plan: Planner = (req, input) => ({
  ...messagesPlan(req, input, 'count_tokens'),
  costless: true,
  replyHeaders: [[SOURCE, 'vendor']],
  withoutCredential: () => ({
    kind: 'answer',
    status: 200,
    headers: [
      ['content-type', 'application/json'],
      [SOURCE, 'local_estimate'],
    ],
    body: JSON.stringify({ input_tokens: estimateInputTokens(JSON.parse(req.body.toString('utf8')) as Record<string, unknown>) }),
  }),
});

export const countTokensRoutes = (pipeline: Pipeline): Route[] => pipeline.routes([{ method: 'POST', path: '/msgvendor/v1/messages/count_tokens', surface, plan }]);
