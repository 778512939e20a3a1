import { outputReader, printableKey, withHeader, withQuery, type Addressed, type Operation, type ProviderAdapter } from './adapter.js';
import { openaiReplyUsage, openaiStreamUsage } from './usage/openai.js';

function address(op: Operation): Addressed | undefined {
  if (op.op === 'chat_completions') return { path: '/v1/chat/completions' };
  if (op.op === 'responses') return { path: withQuery('/v1/responses', op.query) };
  return undefined;
}

/** chat completions (`max_tokens`, `max_completion_tokens`, `n`) and the Responses API (`max_output_tokens`) */
export const openaiRequestedOutput = outputReader([['max_tokens'], ['max_completion_tokens'], ['max_output_tokens']], [['n']]);

export const openai: ProviderAdapter = {
  id: 'openai',
  storedCredential: { kinds: { api_key: printableKey('bearer') }, location: [] },
  publicOrigin: () => 'https://api.openai.com',
  authorize(req, cred) {
    return withHeader(req, 'authorization', `Bearer ${cred.secret}`);
  },
  address,
  requestedOutput: openaiRequestedOutput,
  usageFromJson: openaiReplyUsage,
  streamUsage: openaiStreamUsage,
};
