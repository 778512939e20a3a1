import type { ProviderAdapter } from './adapter.js';
import type { StreamUsageReader, Usage } from './types.js';
import { generateContentStreamUsage, generateContentUsage } from './usage/generate-content.js';
import { messagesStreamUsage, messagesUsage } from './usage/messages.js';

/**
 * Vertex AI: `https://{location}-aiplatform.googleapis.com` (`global` has no
 * prefix), OAuth bearer token. It hosts two wire formats: generate-content
 * (Google publisher models) and messages (rawPredict on Anthropic models), so
 * usage is read in whichever shape the reply has.
 */
export const genvendorVertex: ProviderAdapter = {
  id: 'genvendor_vertex',
  publicOrigin(loc) {
    const location = loc.location ?? 'global';
    return location === 'global' ? 'https://aiplatform.googleapis.com' : `https://${location}-aiplatform.googleapis.com`;
  },
  authorize(req, cred) {
    return { ...req, headers: { ...req.headers, authorization: `Bearer ${cred.secret}` } };
  },
  usageFromJson: (reply): Usage | undefined => generateContentUsage(reply) ?? messagesUsage(reply),
  streamUsage(): StreamUsageReader {
    const readers = [generateContentStreamUsage(), messagesStreamUsage()];
    return {
      push: (chunk) => readers.forEach((r) => r.push(chunk)),
      usage: () => readers[0]?.usage() ?? readers[1]?.usage(),
    };
  },
};

/** Vertex path of a model under a publisher, e.g. `…/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict` */
export function vertexModelPath(project: string, location: string, publisher: 'google' | 'anthropic', model: string, method: string): string {
  return `/v1/projects/${encodeURIComponent(project)}/locations/${encodeURIComponent(location)}/publishers/${publisher}/models/${model}:${method}`;
}
