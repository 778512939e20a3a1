import type { KeyCarrier } from '../http/types.js';

export const BEARER: KeyCarrier = { header: 'authorization', bearer: true };
export const X_API_KEY: KeyCarrier = { header: 'x-api-key' };
export const API_KEY: KeyCarrier = { header: 'api-key' };
export const GOOG_API_KEY: KeyCarrier = { header: 'x-goog-api-key' };
export const QUERY_KEY: KeyCarrier = { query: 'key' };
