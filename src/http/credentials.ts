/** The prefix of a developer key secret: a value that begins with it is the gateway's, never a vendor's. */
export const DEV_KEY_PREFIX = 'gw_';

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(authorization: string | undefined): string | undefined {
  if (authorization === undefined || !/^bearer /i.test(authorization)) return undefined;
  const token = authorization.slice(7).trim();
  return token === '' ? undefined : token;
}
