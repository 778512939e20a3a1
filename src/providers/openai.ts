import { printableKey, type ProviderAdapter } from './adapter.js';
import { openaiReplyUsage, openaiStreamUsage } from './usage/openai.js';

export const openai: ProviderAdapter = {
  id: 'openai',
  storedCredential: { kinds: { api_key: printableKey('bearer') }, location: [] },
  publicOrigin: () => 'https://api.openai.com',
  authorize(req, cred) {
    return { ...req, headers: { ...req.headers, authorization: `Bearer ${cred.secret}` } };
  },
  usageFromJson: openaiReplyUsage,
  streamUsage: openaiStreamUsage,
};
