import { printableKey, type ProviderAdapter } from './adapter.js';
import { messagesStreamUsage, messagesUsage } from './usage/messages.js';

/**
 * The Anthropic Messages API. A key rides on `x-api-key`; a caller that
 * presented its credential as `Authorization: Bearer` (an OAuth token, or the
 * current SDK's habit) has it passed on the same way.
 */
export const msgvendor: ProviderAdapter = {
  id: 'msgvendor',
  storedCredential: { kinds: { api_key: printableKey('api_key') }, location: [] },
  publicOrigin: () => 'https://api.anthropic.com',
  authorize(req, cred) {
    const [name, value] = cred.scheme === 'bearer' ? ['authorization', `Bearer ${cred.secret}`] : ['x-api-key', cred.secret];
    // a route that kept the caller's own header (the parity relay) sends it byte for byte, never rewritten
    if (req.headers[name]?.trim().endsWith(cred.secret)) return req;
    return { ...req, headers: { ...req.headers, [name]: value } };
  },
  usageFromJson: messagesUsage,
  streamUsage: messagesStreamUsage,
};
