import { GatewayError } from '../errors.js';
import type { GatewayRequest } from '../http/types.js';
import type { RelayPlan } from '../pipeline/index.js';
import { ADMITTED, type PolicyStage } from '../pipeline/policy.js';
import type { Location } from '../providers/adapter.js';

/** HTTP 451 Unavailable For Legal Reasons: the refusal of a data-residency rule. */
const RESIDENCY_STATUS = 451;

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

/**
 * Data residency: a call whose upstream region is outside GW_ALLOWED_REGIONS
 * is 451 forbidden before anything is sent, whether the region came with
 * the call or from a stored key.
 */
export function residencyStage(allowedRegions: string): PolicyStage {
  const allowed = parseAllowedRegions(allowedRegions);
  const check = (region: string): void => {
    if (allowed(region)) return;
    throw new GatewayError('forbidden', `upstream region ${region} is outside this deployment's allowed regions (${allowedRegions})`, { status: RESIDENCY_STATUS });
  };
  return {
    name: 'residency',
    // a region the caller names is refused before any stored-key lookup; naming none decides nothing yet
    admit(_req: GatewayRequest, plan: RelayPlan) {
      const region = namedRegion(plan.location);
      if (region !== undefined) check(region);
      return ADMITTED;
    },
    // the resolved location (provider default, stored key, caller) decides, an unnamed region counting as global
    located: (_plan: RelayPlan, location: Location) => check(upstreamRegion(location)),
  };
}
