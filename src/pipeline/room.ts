import { GatewayError } from '../errors.js';
import type { Presented } from '../http/credentials.js';
import type { Location } from '../providers/adapter.js';
import type { StoredDestination } from '../tenancy/vendor-keys.js';
import { OriginFull, type UpstreamInflight } from '../upstream/inflight.js';
import type { Exchange } from './exchange.js';
import { candidateCallOf, placed, type DispatchDeps } from './stages.js';
import { CONTINUE, type CandidateCall, type Plan, type Stage, type Verdict } from './types.js';

/**
 * Dispatch's in-flight rule, applied before the skills (SPEC overloaded rule
 * 1c), so a request dispatch would shed costs no skill pool task and no
 * metering round trip. Its shed is counted and recorded as dispatch's
 * (gw_shed_total{where="upstream_inflight"}, /readyz, a refusal at
 * `dispatch`, which is why the stage bears dispatch's name).
 *
 * A call that can go to one origin only (no fallback, one credential, not
 * a self-hosted model) takes its slot there now, and dispatch sends on it
 * (src/pipeline/relay.ts; a call sent elsewhere gives it back first): the
 * requests of a burst each count as they pass, so those past the limit are
 * shed here although none of them has been sent yet. An exchange that ends
 * without sending, or whose client leaves, gives the slot back (Exchange).
 *
 * A call with several destinations takes nothing: it is shed here only when
 * every destination of it and of each of its fallbacks, as dispatch would
 * walk them, is an origin at GW_UPSTREAM_MAX_INFLIGHT at this moment.
 *
 * Either way it steps aside where dispatch would answer otherwise, or could
 * not be foreseen without waiting: no model yet (model_routing picks it), no
 * credential, a stored-key lookup that waits on the store, an adapter (its
 * load decides), a location or region dispatch refuses, a destination at its
 * own max_inflight (dispatch's answer then is another refusal). Dispatch
 * stays the authority: a destination can fill while the skills run.
 */
export const roomStage = (deps: DispatchDeps): Stage<Exchange> => ({
  name: 'dispatch',
  run(ex) {
    const { inflight } = deps.relay;
    const origin = soleOrigin(deps, ex);
    if (origin !== undefined) {
      const slot = inflight.enter(origin);
      if (slot instanceof OriginFull) return shed(inflight, slot);
      ex.holdSlot(slot);
      return CONTINUE;
    }
    // no origin full, nothing to shed: a call with several destinations costs one read without overload
    if (!inflight.anyFull || !noRoom(deps, ex)) return CONTINUE;
    return shed(inflight, inflight.refusal());
  },
});

function shed(inflight: UpstreamInflight, error: OriginFull): Verdict {
  inflight.answered();
  return { kind: 'refuse', error };
}

/** the one origin the planned call can go to, or undefined where it has several, or dispatch would answer otherwise: see roomStage */
function soleOrigin(deps: DispatchDeps, ex: Exchange): string | undefined {
  const plan = ex.plan as Plan;
  if (plan.unrouted || plan.fallbacks?.length) return undefined;
  const call = ex.call as CandidateCall;
  if (deps.destinations && deps.providers.servedByDestinations(call.provider)) return undefined;
  try {
    const found = credentialOf(deps, ex, call, plan.presented ?? (ex.presented as Presented));
    return found && !found.destinations ? originAt(deps, call, found.location) : undefined;
  } catch (err) {
    return dispatchAnswers(err);
  }
}

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
    const found = credentialOf(deps, ex, call, presented);
    if (found === undefined) return undefined;
    if (!found.destinations) {
      const origin = originAt(deps, call, found.location);
      return origin === undefined ? undefined : [origin];
    }
    const origins: string[] = [];
    for (const key of found.destinations) {
      const location = placed(deps, call, key.location);
      if (location instanceof GatewayError) continue;
      if (deps.storedDestinations.atLimit(call.org.org_id, key)) return undefined;
      origins.push(deps.providers.origin(call.provider, location));
    }
    return origins.length > 0 ? origins : undefined;
  } catch (err) {
    return dispatchAnswers(err);
  }
}

/** a vendor key passed through has no stored location */
const PASSED_THROUGH = { location: {} };

/**
 * The credential dispatch would send `call` with, as far as where it goes:
 * a vendor key passed through, the org's one stored key, or its several
 * (`destinations`); undefined for none, or for a lookup that waits on the
 * store.
 */
function credentialOf(deps: DispatchDeps, ex: Exchange, call: CandidateCall, presented: Presented): { location: Location; destinations?: readonly StoredDestination[] } | undefined {
  if (presented.vendorKey !== undefined) return PASSED_THROUGH;
  const found = deps.storedKeys.find(call.org.org_id, call.provider, ex.req.stages);
  if (!(found instanceof Promise)) return found;
  // dispatch shares this lookup and waits for it; here it is only kept from ending as an unhandled rejection
  found.catch(() => undefined);
  return undefined;
}

/** the origin of a call with one credential, or undefined when dispatch refuses its region */
function originAt(deps: DispatchDeps, call: CandidateCall, stored: Location): string | undefined {
  const location = placed(deps, call, stored);
  return location instanceof GatewayError ? undefined : deps.providers.origin(call.provider, location);
}

/** a refusal of dispatch's own (a location, a stored key that cannot be opened) is its answer, not a shed; anything else is a fault */
function dispatchAnswers(err: unknown): undefined {
  if (err instanceof GatewayError) return undefined;
  throw err;
}
