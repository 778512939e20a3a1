import type { Addressed, Operation, ProviderAdapter } from './adapter.js';
import { printableKey, withHeader } from './adapter.js';
import { openai } from './openai.js';
import type { UpstreamRequest } from './types.js';

/**
 * An operator's own model server speaking the OpenAI chat-completions API
 * (vLLM, SGLang and the like), one of the destinations of GW_DESTINATIONS_FILE.
 * Its origin is the destination's (carried as the location's `endpoint`); its
 * credential, when the file gives one, rides as a bearer. Replies are OpenAI's
 * format, so usage is read as OpenAI's.
 */
export const selfhosted: ProviderAdapter = {
  id: 'selfhosted',
  // never stored by a tenant: the destinations file holds the server's key
  storedCredential: { kinds: { api_key: printableKey('bearer') }, location: [] },
  publicOrigin(loc) {
    if (loc.endpoint === undefined) throw new Error('a self-hosted call is addressed to a destination origin');
    return loc.endpoint;
  },
  authorize(req, cred) {
    return cred.secret === '' ? req : withHeader(req, 'authorization', `Bearer ${cred.secret}`);
  },
  address(op: Operation): Addressed | undefined {
    return op.op === 'chat_completions' ? { path: '/v1/chat/completions' } : undefined;
  },
  requestedOutput: openai.requestedOutput,
  usageFromJson: openai.usageFromJson,
  streamUsage: openai.streamUsage,
};

/** The vLLM dynamic-LoRA and model-list calls a destination takes (the adapter manager sends them). */
export const loraRequests = {
  load: (origin: string, name: string, path: string, apiKey: string | undefined): UpstreamRequest => jsonPost(origin, '/v1/load_lora_adapter', { lora_name: name, lora_path: path }, apiKey),
  unload: (origin: string, name: string, apiKey: string | undefined): UpstreamRequest => jsonPost(origin, '/v1/unload_lora_adapter', { lora_name: name }, apiKey),
  models: (origin: string, apiKey: string | undefined): UpstreamRequest => ({ origin, path: '/v1/models', method: 'GET', headers: bearer(apiKey), body: undefined }),
};

const bearer = (apiKey: string | undefined): Record<string, string> => (apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` });

function jsonPost(origin: string, path: string, doc: unknown, apiKey: string | undefined): UpstreamRequest {
  return { origin, path, method: 'POST', headers: { 'content-type': 'application/json', ...bearer(apiKey) }, body: Buffer.from(JSON.stringify(doc)) };
}

/**
 * The LoRA adapters a server's `GET /v1/models` reply lists as loaded: vLLM
 * lists each beside the base models, with the base it sits on as `parent`.
 */
export function loadedAdapters(reply: unknown): string[] {
  const data = typeof reply === 'object' && reply !== null ? (reply as Record<string, unknown>)['data'] : undefined;
  if (!Array.isArray(data)) return [];
  return data.flatMap((m: unknown) => {
    const r = (typeof m === 'object' && m !== null ? m : {}) as Record<string, unknown>;
    return typeof r['id'] === 'string' && typeof r['parent'] === 'string' && r['parent'] !== '' ? [r['id']] : [];
  });
}
