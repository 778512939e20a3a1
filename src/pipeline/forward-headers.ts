import { CREDENTIAL_HEADERS } from '../http/credentials.js';

/**
 * What of the caller's headers goes upstream: everything but hop-by-hop
 * headers, the gateway's own `x-gw-*`, and every credential carrier (the
 * provider adapter attaches the upstream credential itself).
 */
const DROPPED = new Set([
  ...CREDENTIAL_HEADERS,
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  'expect',
  'accept-encoding',
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-real-ip',
]);

/** Headers the caller named in `Connection` are hop-by-hop too (RFC 9110 §7.6.1). */
function connectionListed(connection: string | undefined): Set<string> | undefined {
  if (connection === undefined) return undefined;
  const names = new Set<string>();
  for (const token of connection.split(',')) {
    const name = token.trim().toLowerCase();
    if (name !== '') names.add(name);
  }
  return names;
}

export function forwardHeaders(incoming: Readonly<Record<string, string>>, keep: readonly string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  const listed = connectionListed(incoming['connection']);
  for (const k in incoming) {
    if (k.startsWith('x-gw-') || (DROPPED.has(k) && !keep.includes(k)) || listed?.has(k)) continue;
    out[k] = incoming[k] as string;
  }
  // replies are scanned for usage and checked for truncation, so ask for them uncompressed
  out['accept-encoding'] = 'identity';
  return out;
}

/** Upstream response headers that describe the hop, not the message. */
const RESPONSE_DROPPED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'trailer', 'upgrade', 'proxy-connection', 'date', 'server']);

export function relayResponseHeaders(headers: Record<string, string | string[] | undefined>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const k in headers) {
    const v = headers[k];
    // the gateway's own headers are the gateway's to write: a vendor's x-gw-* never reaches the caller
    if (v === undefined || RESPONSE_DROPPED.has(k) || k.startsWith('x-gw-')) continue;
    if (Array.isArray(v)) for (const one of v) out.push([k, one]);
    else out.push([k, v]);
  }
  return out;
}
