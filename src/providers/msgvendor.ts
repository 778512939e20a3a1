import type { ProviderAdapter } from './adapter.js';
import { messagesStreamUsage, messagesUsage } from './usage/messages.js';

/**
 * The Anthropic Messages API. A key rides on `x-api-key`; a caller that
 * presented its credential as `Authorization: Bearer` (an OAuth token, or the
 * current SDK's habit) has it passed on the same way.
 */
export const msgvendor: ProviderAdapter = {
  id: 'msgvendor',
  publicOrigin: () => 'https://api.anthropic.com',
  authorize(req, cred) {
    const header: Record<string, string> = cred.scheme === 'bearer' ? { authorization: `Bearer ${cred.secret}` } : { 'x-api-key': cred.secret };
    return { ...req, headers: { ...req.headers, ...header } };
  },
  usageFromJson: messagesUsage,
  streamUsage: messagesStreamUsage,
};
