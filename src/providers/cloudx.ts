import { GatewayError } from '../errors.js';
import { printableKey, withHeader, withQuery, type ProviderAdapter } from './adapter.js';
import { openai, openaiRequestedOutput } from './openai.js';

/** Azure OpenAI resource hosts, the only cloudx endpoints allowed (no open proxy): one DNS label under either service domain. */
const RESOURCE_HOST = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?\.(?:openai\.azure\.com|cognitiveservices\.azure\.com)$/;

/**
 * Endpoints already allowed, with their origins: parsing one costs over a
 * microsecond, and each call to a resource asks again (before the skills and
 * at dispatch). Bounded, since callers name their own.
 */
const allowedEndpoints = new Map<string, string>();
const MAX_ALLOWED_KEPT = 1024;

/**
 * The resource origin named by `value` (a caller's x-gw-azure-endpoint or a
 * stored key's endpoint), or a 400: only `https://<resource>.openai.azure.com`
 * and `https://<resource>.cognitiveservices.azure.com`, with no port, userinfo,
 * path beyond `/`, query or fragment, so the gateway never becomes an open proxy.
 */
export function cloudxEndpoint(value: string): string {
  const known = allowedEndpoints.get(value);
  if (known !== undefined) return known;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw notAllowed(value);
  }
  const host = url.hostname.toLowerCase();
  const clean =
    url.protocol === 'https:' &&
    url.username === '' &&
    url.password === '' &&
    url.port === '' &&
    (url.pathname === '/' || url.pathname === '') &&
    url.search === '' &&
    url.hash === '' &&
    RESOURCE_HOST.test(host) &&
    // the URL parser forgives backslashes, tabs and the like; the raw value must already be the clean origin
    /^https:\/\/[A-Za-z0-9.-]+\/?$/.test(value);
  if (!clean) throw notAllowed(value);
  const origin = `https://${host}`;
  if (allowedEndpoints.size >= MAX_ALLOWED_KEPT) allowedEndpoints.clear();
  allowedEndpoints.set(value, origin);
  return origin;
}

const notAllowed = (value: string) =>
  new GatewayError('request_error', `not an Azure OpenAI resource endpoint: ${JSON.stringify(value.slice(0, 200))} (https://<resource>.openai.azure.com or https://<resource>.cognitiveservices.azure.com)`, {
    fields: { field: 'x-gw-azure-endpoint' },
  });

/**
 * Azure OpenAI: the OpenAI wire format on a per-resource origin. A directory
 * (Entra) token rides as `Authorization: Bearer`, a resource key as `api-key`.
 */
export const cloudx: ProviderAdapter = {
  id: 'cloudx',
  storedCredential: { kinds: { api_key: printableKey('api_key') }, location: ['endpoint'] },
  publicOrigin(loc) {
    if (loc.endpoint === undefined || loc.endpoint === '') {
      throw new GatewayError('request_error', 'no Azure OpenAI resource: send x-gw-azure-endpoint or store the key with its endpoint', { fields: { field: 'x-gw-azure-endpoint' } });
    }
    return cloudxEndpoint(loc.endpoint);
  },
  // checked where the hostname is built (publicOrigin), unless GW_UPSTREAM_CLOUDX replaces every resource
  readLocation(headers) {
    const endpoint = headers['x-gw-azure-endpoint'];
    return endpoint === undefined ? undefined : { endpoint };
  },
  address(op) {
    if (op.op === 'vendor_path') return { path: op.path };
    if (op.op === 'responses') return { path: withQuery('/openai/v1/responses', op.query) };
    return undefined;
  },
  requestedOutput: openaiRequestedOutput,
  authorize(req, cred) {
    return cred.scheme === 'bearer' ? withHeader(req, 'authorization', `Bearer ${cred.secret}`) : withHeader(req, 'api-key', cred.secret);
  },
  usageFromJson: openai.usageFromJson,
  streamUsage: openai.streamUsage,
};
