/** The prefix of a developer key secret: a value that begins with it is the gateway's, never a vendor's. */
export const DEV_KEY_PREFIX = 'gw_';

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(authorization: string | undefined): string | undefined {
  if (authorization === undefined || !/^bearer /i.test(authorization)) return undefined;
  const token = authorization.slice(7).trim();
  return token === '' ? undefined : token;
}

/** Every header that can carry a credential, the gateway's or a vendor's: never forwarded as is, never logged. */
export const CREDENTIAL_HEADERS: readonly string[] = [
  'authorization',
  'proxy-authorization',
  'x-api-key',
  'api-key',
  'x-goog-api-key',
  'cookie',
  'x-gw-key',
  'x-gw-provider-key',
  'x-gw-admin-key',
  'x-gw-config-secret',
];

/** What a caller presented, sorted into the developer key and a pass-through vendor credential. */
export interface Presented {
  /** the developer key secret (`gw_…`) */
  devKey: string | undefined;
  /** a vendor credential the caller sent on the surface's own carrier or x-gw-provider-key */
  vendorKey: string | undefined;
  /** the carrier header the vendor credential came on */
  vendorCarrier: string | undefined;
}
