import { GatewayError } from '../errors.js';
import type { Presented } from '../http/credentials.js';
import type { Location } from '../providers/adapter.js';
import type { Exchange } from './exchange.js';
import { candidateCallOf, placed, type DispatchDeps } from './stages.js';
import { CONTINUE, type CandidateCall, type Plan, type Stage } from './types.js';

/**
 * Dispatch's in-flight rule, checked before the skills (SPEC overloaded
 * rule 1c). When every destination of the planned call and of each of its
 * fallbacks, as dispatch would walk them, is an upstream origin at
 * GW_UPSTREAM_MAX_INFLIGHT, dispatch would send nothing anywhere and answer
 * the dispatch-side shed; answered here, the request costs no skill pool
 * task and no metering round trip. It is counted and recorded as that shed
 * (gw_shed_total{where="upstream_inflight"}, /readyz, a refusal at
 * `dispatch`, which is why the stage bears dispatch's name).
 *
 * It sheds only what dispatch would shed at this moment, and steps aside
 * where dispatch would answer otherwise, or could not be foreseen without
 * waiting: no model yet (model_routing picks it), no credential, a
 * stored-key lookup that waits on the store, an adapter (its load decides),
 * a location or region dispatch refuses, a destination at its own
 * max_inflight (dispatch's answer then is another refusal). Dispatch stays
 * the authority: a destination can fill while the skills run.
 */
export const roomStage = (deps: DispatchDeps): Stage<Exchange> => ({
  name: 'dispatch',
  run(ex) {
    const { inflight } = deps.relay;
    // no origin full, nothing to shed: the cost of the check without overload
    if (!inflight.anyFull || !noRoom(deps, ex)) return CONTINUE;
    inflight.answered();
    return { kind: 'refuse', error: inflight.refusal() };
  },
});

/** every candidate, the planned call and its fallbacks, has destinations and all of them are full origins */
function noRoom(deps: DispatchDeps, ex: Exchange): boolean {
  const plan = ex.plan as Plan;
  if (plan.unrouted) return false;
  const caller = ex.caller as NonNullable<Exchange['caller']>;
  // a fallback's call takes the credentials as presented (only whether a vendor key was passed through matters here)
  const presented = ex.presented as Presented;
  const full = (call: CandidateCall, as: Presented) => originsOf(deps, ex, call, as)?.every((o) => deps.relay.inflight.full(o)) === true;
  return full(ex.call as CandidateCall, plan.presented ?? presented) && (plan.fallbacks ?? []).every((f) => full(candidateCallOf(ex, caller, f), presented));
}

/**
 * The origins dispatch would try for `call`, one per destination (a stored
 * key passed over for its region is none; never an empty list), or
 * undefined where dispatch would not end in a full origin: see roomStage.
 */
function originsOf(deps: DispatchDeps, ex: Exchange, call: CandidateCall, presented: Presented): string[] | undefined {
  try {
    if (deps.destinations && deps.providers.servedByDestinations(call.provider)) {
      const slots = deps.destinations.slots(call.model);
      return slots?.some((s) => s.atLimit) ? undefined : slots?.map((s) => s.origin);
    }
    if (presented.vendorKey !== undefined) return originAt(deps, call, {});
    const found = deps.storedKeys.find(call.org.org_id, call.provider, ex.req.stages);
    if (found instanceof Promise) {
      // dispatch shares this lookup and waits for it; here it is only kept from ending as an unhandled rejection
      found.catch(() => undefined);
      return undefined;
    }
    if (found === undefined) return undefined;
    if (!found.destinations) return originAt(deps, call, found.location);
    const origins: string[] = [];
    for (const key of found.destinations) {
      const location = placed(deps, call, key.location);
      if (location instanceof GatewayError) continue;
      if (deps.storedDestinations.atLimit(call.org.org_id, key)) return undefined;
      origins.push(deps.providers.origin(call.provider, location));
    }
    return origins.length > 0 ? origins : undefined;
  } catch (err) {
    // a location dispatch refuses: its refusal is the answer, not a shed
    if (err instanceof GatewayError) return undefined;
    throw err;
  }
}

/** the one origin of a call with one credential, or undefined when dispatch refuses its region */
function originAt(deps: DispatchDeps, call: CandidateCall, stored: Location): string[] | undefined {
  const location = placed(deps, call, stored);
  return location instanceof GatewayError ? undefined : [deps.providers.origin(call.provider, location)];
}
