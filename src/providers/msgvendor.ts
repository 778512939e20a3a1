import { outputReader, printableKey, withHeader, withQuery, type ProviderAdapter } from './adapter.js';
import { messagesStreamUsage, messagesUsage } from './usage/messages.js';

export const messagesRequestedOutput = outputReader([['max_tokens']]);

/**
 * The Anthropic Messages API. A key rides on `x-api-key`; a caller that
 * presented its credential as `Authorization: Bearer` (an OAuth token, or the
 * current SDK's habit) has it passed on the same way.
 */
export const msgvendor: ProviderAdapter = {
  id: 'msgvendor',
  storedCredential: { kinds: { api_key: printableKey('api_key') }, location: [] },
  publicOrigin: () => 'https://api.anthropic.com',
  address(op) {
    if (op.op === 'messages') return { path: withQuery('/v1/messages', op.query) };
    if (op.op === 'count_tokens') return { path: withQuery('/v1/messages/count_tokens', op.query) };
    // the parity relay: the caller's own path and query
    if (op.op === 'vendor_path') return { path: op.path };
    return undefined;
  },
  requestedOutput: messagesRequestedOutput,
  authorize(req, cred) {
    const [name, value] = cred.scheme === 'bearer' ? ['authorization', `Bearer ${cred.secret}`] : ['x-api-key', cred.secret];
    // a route that kept the caller's own header (the parity relay) sends it byte for byte, never rewritten
    if (req.headers[name]?.trim().endsWith(cred.secret)) return req;
    return withHeader(req, name, value);
  },
  usageFromJson: messagesUsage,
  streamUsage: messagesStreamUsage,
};
