/** Where a surface's SDKs put their key. `x-gw-key` is accepted on every route besides these. */
export type KeyCarrier = { header: string; bearer?: true } | { query: string };

export const BEARER: KeyCarrier = { header: 'authorization', bearer: true };
export const X_API_KEY: KeyCarrier = { header: 'x-api-key' };
export const API_KEY: KeyCarrier = { header: 'api-key' };
export const GOOG_API_KEY: KeyCarrier = { header: 'x-goog-api-key' };
export const QUERY_KEY: KeyCarrier = { query: 'key' };
