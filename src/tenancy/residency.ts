import type { Location } from '../providers/adapter.js';

/** Legacy regional cloudx endpoints name their region: `https://eastus.api.cognitive.microsoft.com`. */
const REGIONAL_ENDPOINT = /^https?:\/\/([a-z0-9]+)\.api\.cognitive\.microsoft\.com(?::\d+)?$/i;

/** The region an upstream that names none counts as: the gateway cannot say where it runs. */
const UNKNOWN_REGION = 'global';

/**
 * The region a location names, if any: the cloudy region, the Vertex
 * location, or a regional cloudx endpoint. Resource endpoints
 * (`https://<resource>.openai.azure.com`) and vendors without regions name none.
 */
export function namedRegion(loc: Location | undefined): string | undefined {
  if (!loc) return undefined;
  if (loc.region) return loc.region.toLowerCase();
  if (loc.location) return loc.location.toLowerCase();
  const m = loc.endpoint ? REGIONAL_ENDPOINT.exec(loc.endpoint) : null;
  return m?.[1]?.toLowerCase();
}

/**
 * The region a call's upstream runs in: the one its resolved location names,
 * else `global`. Counting the unknown as `global` makes the rule fail closed:
 * `eu-*` refuses openai, msgvendor, genvendor and cloudx resource endpoints
 * unless the operator also lists `global`.
 */
export const upstreamRegion = (loc: Location | undefined): string => namedRegion(loc) ?? UNKNOWN_REGION;

/** GW_ALLOWED_REGIONS: comma-separated, case-insensitive; an entry ending in `*` is a prefix (`eu-*`, `europe-*`). */
export function parseAllowedRegions(setting: string): (region: string) => boolean {
  const entries = setting
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  const exact = new Set(entries.filter((e) => !e.endsWith('*')));
  const prefixes = entries.filter((e) => e.endsWith('*')).map((e) => e.slice(0, -1));
  return (region) => exact.has(region) || prefixes.some((p) => region.startsWith(p));
}
