import { DEV_KEY_PREFIX } from './credentials.js';

/** One `name=value` pair of a raw query: decoded as URLSearchParams decodes it, and the bytes as sent. */
interface QueryPair {
  readonly raw: string;
  readonly name: string;
  readonly value: string;
}

/**
 * The pairs of a raw query string (no leading '?'), with URLSearchParams
 * semantics: split on `&`, empty pairs skipped, `+` is a space, percent
 * escapes decoded as UTF-8 and malformed ones kept as they are. Every reader
 * of a query parameter goes through here, so the gateway and the vendor
 * cannot read a name differently (`%6Bey` is `key`).
 */
function queryPairs(query: string): QueryPair[] {
  const pairs: QueryPair[] = [];
  if (query === '') return pairs;
  for (const raw of query.split('&')) {
    if (raw === '') continue;
    // one pair at a time, so each keeps its raw bytes; the leading '&' stops URLSearchParams from eating a leading '?'
    for (const [name, value] of new URLSearchParams(`&${raw}`)) pairs.push({ raw, name, value });
  }
  return pairs;
}

/** The first value of a query parameter, decoded; undefined when absent. */
export function queryParam(query: string, name: string): string | undefined {
  return queryPairs(query).find((p) => p.name === name)?.value;
}

/** `gw_` at the start of a word: a developer key, alone or inside a value (`Bearer gw_…`). */
const DEV_KEY_IN = new RegExp(`\\b${DEV_KEY_PREFIX}`);

/**
 * The query to send upstream, without its `?` ('' for none): the caller's pairs byte for byte,
 * minus every pair named by one of `carriers` (credential parameters: the
 * adapter attaches the vendor credential itself) and every pair whose
 * decoded name or value carries a developer key, whatever its spelling
 * (percent-encoded, `+`, repeated).
 */
export function upstreamQuery(query: string, carriers: readonly string[] = []): string {
  if (query === '') return '';
  const pairs = queryPairs(query);
  const kept = pairs.filter((p) => !carriers.includes(p.name) && !DEV_KEY_IN.test(p.name) && !DEV_KEY_IN.test(p.value));
  if (kept.length === pairs.length) return query;
  return kept.map((p) => p.raw).join('&');
}
