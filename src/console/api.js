// The gateway's documented routes (docs/api.md), called with the signed-in
// developer key. The console reads nothing else: what the key may not read,
// the gateway refuses, and the console shows the refusal.

const KEY_SLOT = 'gw-console-key';

/** The developer key, kept in this tab's session storage only (never a cookie, never local storage). */
export const session = {
  key: () => sessionStorage.getItem(KEY_SLOT),
  signIn: (key) => sessionStorage.setItem(KEY_SLOT, key),
  signOut: () => sessionStorage.removeItem(KEY_SLOT),
};

/** A refusal or failure of the gateway: its status, error type and message. */
export class ApiError extends Error {
  constructor(status, type, message) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

/** One call; `anonymous` routes (the public ones) go without the key. */
async function call(method, path, { query = {}, body, anonymous = false } = {}) {
  const url = new URL(path, location.origin);
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== null && value !== '') url.searchParams.set(name, String(value));
  const headers = {};
  if (!anonymous) headers.authorization = `Bearer ${session.key() ?? ''}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res;
  try {
    res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store', credentials: 'omit' });
  } catch (err) {
    throw new ApiError(0, 'unreachable', `the gateway did not answer: ${err.message}`);
  }
  const text = await res.text();
  let json;
  try {
    json = text === '' ? {} : JSON.parse(text);
  } catch {
    throw new ApiError(res.status, 'bad_reply', `HTTP ${res.status}: the answer is not JSON`);
  }
  if (!res.ok) throw new ApiError(res.status, json.error?.type ?? 'error', json.error?.message ?? `HTTP ${res.status}`);
  return json;
}

const seg = encodeURIComponent;

export const api = {
  health: () => call('GET', '/healthz', { anonymous: true }),
  models: () => call('GET', '/v1/models', { anonymous: true }),
  settings: () => call('GET', '/api/v1/settings'),
  usage: (query) => call('GET', '/api/v1/usage', { query }),
  /** the answering replica's inspector feed */
  recent: (query) => call('GET', '/api/v1/requests', { query }),
  /** the durable list (Redis) */
  durable: (query) => call('GET', '/api/v1/tenant/requests', { query }),
  request: (id) => call('GET', `/api/v1/tenant/request/${seg(id)}`),
  logs: (id, tenantId) => call('GET', `/api/v1/logs/request/${seg(id)}`, { query: { tenant_id: tenantId } }),
  scorecard: (orgId, skill, query) => call('GET', `/api/v1/tenant/${seg(orgId)}/skills/${seg(skill)}/scorecard`, { query }),
  setSpendCap: (body) => call('POST', '/api/v1/spend_cap/update', { body }),
  setModelAccess: (body) => call('POST', '/api/v1/model_access/update', { body }),
};
