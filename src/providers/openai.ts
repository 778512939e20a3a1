import { outputReader, printableKey, withQuery, type Addressed, type Operation, type ProviderAdapter } from './adapter.js';
import { num, sseUsageReader } from './sse.js';
import type { Usage } from './types.js';

/** Chat-completions usage (prompt/completion) or Responses usage (input/output). */
function openaiUsage(u: unknown): Usage | undefined {
  if (typeof u !== 'object' || u === null) return undefined;
  const r = u as Record<string, unknown>;
  const details = (r['prompt_tokens_details'] ?? r['input_tokens_details']) as Record<string, unknown> | undefined;
  return {
    input_tokens: num(r['prompt_tokens'] ?? r['input_tokens']),
    output_tokens: num(r['completion_tokens'] ?? r['output_tokens']),
    cached_tokens: num(details?.['cached_tokens']),
  };
}

const replyUsage = (reply: unknown): Usage | undefined => {
  if (typeof reply !== 'object' || reply === null) return undefined;
  const r = reply as Record<string, unknown>;
  // a Responses stream event carries the response object; a chat chunk carries usage itself
  const response = r['response'] as Record<string, unknown> | undefined;
  const usage = openaiUsage(r['usage'] ?? response?.['usage']);
  const model = r['model'] ?? response?.['model'];
  return usage && typeof model === 'string' ? { ...usage, model } : usage;
};

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
    return { ...req, headers: { ...req.headers, authorization: `Bearer ${cred.secret}` } };
  },
  address,
  requestedOutput: openaiRequestedOutput,
  usageFromJson: replyUsage,
  streamUsage: () => sseUsageReader(['"usage":{', '"usage": {'], (event) => replyUsage(event)),
};
