import { modelSegment, outputReader, printableKey, withHeader, withQuery, type ProviderAdapter } from './adapter.js';
import { generateContentStreamUsage, generateContentUsage } from './usage/generate-content.js';

export const generateContentRequestedOutput = outputReader([['generationConfig', 'maxOutputTokens']], [['generationConfig', 'candidateCount']]);

/** `:generateContent` or `:streamGenerateContent` */
export const generateMethod = (stream: boolean): string => (stream ? 'streamGenerateContent' : 'generateContent');

/**
 * The Gemini developer API (generativelanguage). An API key rides on
 * `x-goog-api-key`; a caller's OAuth bearer token passes as a bearer.
 */
export const genvendor: ProviderAdapter = {
  id: 'genvendor',
  storedCredential: { kinds: { api_key: printableKey('api_key') }, location: [] },
  publicOrigin: () => 'https://generativelanguage.googleapis.com',
  address(op) {
    if (op.op !== 'generate_content') return undefined;
    return { path: withQuery(`/v1beta/models/${modelSegment(op.model)}:${generateMethod(op.stream)}`, op.query) };
  },
  requestedOutput: generateContentRequestedOutput,
  authorize(req, cred) {
    return cred.scheme === 'bearer' ? withHeader(req, 'authorization', `Bearer ${cred.secret}`) : withHeader(req, 'x-goog-api-key', cred.secret);
  },
  usageFromJson: generateContentUsage,
  streamUsage: generateContentStreamUsage,
};
