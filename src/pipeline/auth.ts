import { GatewayError } from '../errors.js';
import type { GatewayRequest, KeyCarrier } from '../http/types.js';
import { bearerToken, DEV_KEY_PREFIX, type Presented } from '../http/credentials.js';
import { queryParam } from '../http/query.js';
import type { Directory } from '../tenancy/directory.js';
import type { Caller } from '../tenancy/types.js';

/** Sorts what the caller presented into the developer key and a pass-through vendor credential. */
export function presentedCredentials(req: GatewayRequest, carriers: readonly KeyCarrier[]): Presented {
  let devKey: string | undefined;
  let vendorKey: string | undefined;
  let vendorCarrier: string | undefined;
  const gwKey = req.headers['x-gw-key'];
  if (gwKey?.startsWith(DEV_KEY_PREFIX)) devKey = gwKey;
  for (const c of carriers) {
    let value = 'query' in c ? queryParam(req.query, c.query) : req.headers[c.header];
    if (value === undefined || value === '') continue;
    if ('bearer' in c) {
      const token = bearerToken(value);
      if (token === undefined) continue;
      value = token;
    }
    if (value.startsWith(DEV_KEY_PREFIX)) devKey ??= value;
    else if (vendorKey === undefined) {
      vendorKey = value;
      vendorCarrier = 'query' in c ? `query:${c.query}` : c.header;
    }
  }
  const explicit = req.headers['x-gw-provider-key'];
  // a gw_ value is never forwarded upstream
  if (explicit?.startsWith(DEV_KEY_PREFIX)) throw new GatewayError('request_error', 'x-gw-provider-key carries a gateway developer key; it takes the vendor credential', { fields: { field: 'x-gw-provider-key' } });
  if (explicit !== undefined && explicit !== '') {
    vendorKey = explicit;
    vendorCarrier = 'x-gw-provider-key';
  }
  return { devKey, vendorKey, vendorCarrier };
}

/** The caller behind a developer key, or 401 invalid_developer_key: there is no anonymous fallback. */
export function authenticate(directory: Directory, devKey: string | undefined): Caller {
  const found = devKey === undefined ? undefined : directory.authenticate(devKey);
  if (!found) throw new GatewayError('invalid_developer_key', 'developer key missing, invalid, revoked or expired');
  return found;
}
