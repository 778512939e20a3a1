import { GatewayError } from '../errors.js';
import { modelSegment, outputReader, printableKey, withHeader, type Addressed, type Location, type Operation, type ProviderAdapter } from './adapter.js';
import { generateMethod } from './genvendor.js';
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
  storedCredential: { kinds: { oauth_token: printableKey('bearer') }, location: ['project', 'location'] },
  defaultLocation: { location: 'global' },
  publicOrigin(loc) {
    const location = loc.location ?? 'global';
    // the location becomes a hostname label: checked here, whichever route supplied it (no SSRF)
    if (!VERTEX_LOCATION.test(location)) throw new GatewayError('request_error', `not a Vertex location: ${JSON.stringify(location.slice(0, 64))}`, { fields: { field: 'x-gw-vertex-location' } });
    return location === 'global' ? 'https://aiplatform.googleapis.com' : `https://${location}-aiplatform.googleapis.com`;
  },
  readLocation: vertexLocationOf,
  // the path checks project and location once they are resolved (vertexTarget); the origin checks the location label
  address,
  // it hosts both formats: whichever limit the body sets
  requestedOutput: outputReader([['max_tokens'], ['generationConfig', 'maxOutputTokens']], [['generationConfig', 'candidateCount']]),
  authorize(req, cred) {
    return withHeader(req, 'authorization', `Bearer ${cred.secret}`);
  },
  usageFromJson: (reply): Usage | undefined => generateContentUsage(reply) ?? messagesUsage(reply),
  streamUsage(): StreamUsageReader {
    const readers = [generateContentStreamUsage(), messagesStreamUsage()];
    return {
      push: (chunk) => readers.forEach((r) => r.push(chunk)),
      usage: () => readers[0]?.usage() ?? readers[1]?.usage(),
      // the reply is in one format: the reader that met its text
      streamedText: () => [readers[0]?.streamedText(), readers[1]?.streamedText()].find((t) => t && t.chars > 0) ?? { text: '', chars: 0 },
    };
  },
};

/** Vertex path of a model under a publisher, e.g. `…/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict`, at the resolved location */
const modelPath =
  (publisher: 'google' | 'anthropic', model: string, method: string, query = '') =>
  (loc: Location): string => {
    const { project, location } = vertexTarget(loc);
    return `/v1/projects/${encodeURIComponent(project)}/locations/${encodeURIComponent(location)}/publishers/${publisher}/models/${model}:${method}${query === '' ? '' : `?${query}`}`;
  };

/** The body version Anthropic models on Vertex take in place of the anthropic-version header. */
const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

/**
 * Vertex hosts generate-content for Google's models and the Messages API for
 * Anthropic's, under Anthropic's rules for Claude on Vertex: the model moves
 * into the path (`rawPredict`, `streamRawPredict` or the `count-tokens`
 * model), `anthropic_version` joins the body unless the caller set one, and
 * the caller's query (the SDK's `beta=true`) has no meaning there.
 */
function address(op: Operation): Addressed | undefined {
  switch (op.op) {
    case 'generate_content':
      return { path: modelPath('google', modelSegment(op.model), generateMethod(op.stream), op.query) };
    case 'messages':
    case 'count_tokens': {
      if (!op.parsed) return undefined;
      const model = modelSegment(op.model);
      const body: Record<string, unknown> = { ...op.parsed };
      if (op.op === 'messages') delete body['model'];
      body['anthropic_version'] ??= VERTEX_ANTHROPIC_VERSION;
      const path = op.op === 'count_tokens' ? modelPath('anthropic', 'count-tokens', 'rawPredict') : modelPath('anthropic', model, op.stream ? 'streamRawPredict' : 'rawPredict');
      return { path, body: Buffer.from(JSON.stringify(body)) };
    }
    default:
      return undefined;
  }
}

/** GCP project ids: 6-30 of lowercase letters, digits and hyphens, starting with a letter (or a project number). */
const PROJECT_ID = /^(?:[a-z][a-z0-9-]{4,28}[a-z0-9]|[0-9]{1,20})$/;
/** `global`, or a region such as `us-central1`, `europe-west4`, `northamerica-northeast1` */
const VERTEX_LOCATION = /^(?:global|[a-z]{2,}-[a-z]+[0-9]{1,2})$/;

/**
 * The project and location a Vertex call goes to, checked so a caller-supplied
 * value can only name a Vertex host and path, never another origin (no SSRF).
 * Location defaults to `global`; a missing project is a 400.
 */
export function vertexTarget(loc: Location): { project: string; location: string } {
  const { project, location = 'global' } = loc;
  if (project === undefined || project === '') {
    throw new GatewayError('request_error', 'genvendor_vertex needs a project: send x-gw-vertex-project or store one with the vertex key', { fields: { field: 'x-gw-vertex-project' } });
  }
  if (!PROJECT_ID.test(project)) throw new GatewayError('request_error', `not a Vertex project id: ${JSON.stringify(project)}`, { fields: { field: 'x-gw-vertex-project' } });
  if (!VERTEX_LOCATION.test(location)) throw new GatewayError('request_error', `not a Vertex location: ${JSON.stringify(location)}`, { fields: { field: 'x-gw-vertex-location' } });
  return { project, location };
}

/** The project and location a caller names with `x-gw-vertex-project` / `x-gw-vertex-location` (checked by vertexTarget). */
function vertexLocationOf(headers: Readonly<Record<string, string>>): Location | undefined {
  if (headers['x-gw-vertex-project'] === undefined && headers['x-gw-vertex-location'] === undefined) return undefined;
  const loc: Location = {};
  const project = headers['x-gw-vertex-project'];
  const location = headers['x-gw-vertex-location'];
  if (project !== undefined) loc.project = project;
  if (location !== undefined) loc.location = location;
  return loc;
}
