import { GatewayError } from '../errors.js';
import type { GatewayRequest } from '../http/types.js';
import type { RelayPlan } from '../pipeline/index.js';
import { ADMITTED, type PolicyStage } from '../pipeline/policy.js';
import type { Location } from '../providers/adapter.js';

/** HTTP 451 Unavailable For Legal Reasons: the refusal of a data-residency rule. */
const RESIDENCY_STATUS = 451;

/** Legacy regional cloudx endpoints name their region: `https://eastus.api.cognitive.microsoft.com`. */
const REGIONAL_ENDPOINT = /^https?:\/\/([a-z0-9]+)\.api\.cognitive\.microsoft\.com(?::\d+)?$/i;

/**
 * The region a call's upstream runs in, when the location names one: the
 * cloudy region, the Vertex location, or a regional cloudx endpoint. Resource
 * endpoints (`https://<resource>.openai.azure.com`) and vendors without
 * regions name none.
 */
export function upstreamRegion(loc: Location | undefined): string | undefined {
  if (!loc) return undefined;
  if (loc.region) return loc.region.toLowerCase();
  if (loc.location) return loc.location.toLowerCase();
  const m = loc.endpoint ? REGIONAL_ENDPOINT.exec(loc.endpoint) : null;
  return m?.[1]?.toLowerCase();
}

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
 * the call or from a stored key. Upstreams that name no region are not
 * subject to the rule (docs/operations.md says so).
 */
export function residencyStage(allowedRegions: string): PolicyStage {
  const allowed = parseAllowedRegions(allowedRegions);
  const check = (loc: Location | undefined): void => {
    const region = upstreamRegion(loc);
    if (region === undefined || allowed(region)) return;
    throw new GatewayError('forbidden', `upstream region ${region} is outside this deployment's allowed regions (${allowedRegions})`, { status: RESIDENCY_STATUS });
  };
  return {
    name: 'residency',
    // the caller's own location first, before any stored-key lookup
    admit(_req: GatewayRequest, plan: RelayPlan) {
      check(plan.location);
      return ADMITTED;
    },
    // then the resolved one, which may come from a stored key
    located: (_plan: RelayPlan, location: Location) => check(location),
  };
}
