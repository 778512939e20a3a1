import { GatewayError } from '../errors.js';
import type { Presented } from '../http/credentials.js';
import type { GatewayRequest, HeaderList, ResponseSink } from '../http/types.js';
import type { Location } from '../providers/adapter.js';
import type { Providers } from '../providers/index.js';
import type { ProviderId, UpstreamRequest } from '../providers/types.js';
import type { Directory } from '../tenancy/directory.js';
import type { Caller } from '../tenancy/types.js';
import type { StoredDestination, StoredKeys } from '../tenancy/vendor-keys.js';
import type { Metrics } from '../telemetry/metrics.js';
import { OriginFull } from '../upstream/inflight.js';
import { account, accountRefusal } from './accounting.js';
import { authenticate, presentedCredentials } from './auth.js';
import { resolveCredential } from './credentials.js';
import type { Exchange } from './exchange.js';
import { forwardHeaders } from './forward-headers.js';
import { FallbackSink, NEXT_CANDIDATE, nothingSent } from './fallback.js';
import { relay, type RelayDeps, type RelayOutcome } from './relay.js';
import { CONTINUE, type Answer, type Call, type Candidate, type CandidateCall, type DestinationPicker, type DestinationRouter, type DispatchOutcome, type DispatchStep, type Fallback, type HoldRule, type PickedDestination, type PlaceKey, type Plan, type PolicyStage, type PlanInput, type RowSink, type SkillInput, type SkillsStage, type Stage, type StageName, type Verdict } from './types.js';

export const authenticateStage = (directory: Directory): Stage<Exchange> => ({
  name: 'authenticate',
  run(ex) {
    ex.req.stages.begin('auth');
    const presented = presentedCredentials(ex.req, ex.surface.carriers);
    ex.caller = authenticate(directory, presented.devKey);
    ex.presented = presented;
    ex.req.stages.end();
    return CONTINUE;
  },
});

/** The route's planner makes the call; its body and model are kept as sent, for a direct relay. */
export const planStage = (providers: Providers): Stage<Exchange> => ({
  name: 'plan',
  run(ex) {
    const planned = ex.row.plan(ex.req, { providers, presented: ex.presented, caller: ex.caller, facts: ex } as PlanInput);
    if (planned instanceof Promise) return planned.then((p) => adopt(ex, p));
    return adopt(ex, planned);
  },
});

function adopt(ex: Exchange, plan: Plan): Verdict {
  const caller = ex.caller as NonNullable<Exchange['caller']>;
  ex.res.meta.tenant = caller.org.org_id;
  ex.skillChoices = plan.skillChoices;
  ex.dimensions = plan.dimensions;
  if (plan.deadlineMs !== undefined) ex.res.shortenDeadline(plan.deadlineMs, `no response began within the request's own limit of ${plan.deadlineMs} ms`);
  tryCandidate(ex, plan);
  return CONTINUE;
}

/** The exchange's call becomes `plan` (the route's first choice, or the next fallback with those after it). */
export function tryCandidate(ex: Exchange, plan: Plan): void {
  const caller = ex.caller as NonNullable<Exchange['caller']>;
  ex.plan = plan;
  ex.unskilled = undefined;
  ex.heldBack = false;
  ex.dispatchSteps = undefined;
  ex.call = callOf(ex, caller, plan);
  const meta = ex.res.meta;
  meta.provider = plan.provider;
  meta.model = plan.model;
}

// one literal, not the candidate call spread with the body added: a property added to a spread's copy takes V8's slow path (about 1 µs)
const callOf = (ex: Exchange, caller: NonNullable<Exchange['caller']>, c: Candidate): Call => ({ org: caller.org, key: caller.key, provider: c.provider, model: c.model, location: c.location, acceptedAt: ex.req.stages.startedAt, body: c.body });

export const candidateCallOf = (ex: Exchange, caller: NonNullable<Exchange['caller']>, c: Fallback | Candidate): CandidateCall => ({ org: caller.org, key: caller.key, provider: c.provider, model: c.model, location: c.location, acceptedAt: ex.req.stages.startedAt });

/**
 * A list of policy stages run in order (admission: dedicated tenant,
 * residency, model access, rate, and any shedding hook; metering: the spend
 * cap). Answers synchronously while every policy does. What a policy
 * reserves is held on the exchange and settled at accounting (released on a
 * refusal).
 */
export class PolicyList implements Stage<Exchange> {
  /** the policies that check each further candidate of an admitted call */
  private readonly candidateChecks: readonly PolicyStage[];

  constructor(
    readonly name: StageName,
    private readonly policies: readonly PolicyStage[],
    private readonly clockPrefix: string,
    /** metering skips calls the vendor does not bill */
    private readonly skipCostless = false,
  ) {
    this.candidateChecks = policies.filter((p) => p.candidate);
  }

  run(ex: Exchange, from = 0): Verdict | Promise<Verdict> {
    if (this.skipCostless && ex.plan?.costless) return CONTINUE;
    const call = ex.call as NonNullable<Exchange['call']>;
    for (let i = from; i < this.policies.length; i++) {
      const policy = this.policies[i] as PolicyStage;
      ex.req.stages.begin(`${this.clockPrefix}${policy.name}`);
      const out = policy.admit(call);
      if (out instanceof Promise) {
        return out.then((a) => {
          ex.hold(a);
          return this.run(ex, i + 1);
        });
      }
      ex.hold(out);
    }
    if (this.policies.length > 0) ex.req.stages.end();
    const fallbacks = ex.plan?.fallbacks;
    if (fallbacks && this.candidateChecks.length > 0) {
      const caller = ex.caller as NonNullable<Exchange['caller']>;
      // every candidate is judged before the first is sent: a refusal leaves nothing upstream
      for (const f of fallbacks) for (const policy of this.candidateChecks) policy.candidate?.(candidateCallOf(ex, caller, f));
    }
    return CONTINUE;
  }
}

/** What the skills stage needs to plan a call again once a skill changed it. */
export interface ReplanDeps {
  providers: Providers;
  /** admission's checks of a further candidate (model access, residency): a routed call is judged as one */
  candidateChecks: readonly PolicyStage[];
}

// after the plan stage the exchange has its call: it is the skills' input as it stands, with no copy
export const skillsStage = (skills: SkillsStage, deps: ReplanDeps): Stage<Exchange> => ({
  name: 'skills',
  run(ex) {
    const out = skills.run(ex as Exchange & SkillInput);
    return out instanceof Promise ? out.then((v) => afterSkills(deps, ex, v)) : afterSkills(deps, ex, out);
  },
});

/** A skill's change is planned again as the caller's own request would be; a call that still names no model is refused. */
function afterSkills(deps: ReplanDeps, ex: Exchange, v: Verdict): Verdict | Promise<Verdict> {
  if (v.kind === 'rewrite') return replan(deps, ex, v);
  const unrouted = (ex.plan as Plan).unrouted;
  if (v.kind === 'continue' && unrouted) return { kind: 'refuse', error: unrouted };
  return v;
}

/**
 * The skills changed the caller's request (its body, in the surface's own
 * shape, and/or its model): the route plans it again, so a translation, a
 * model named in the path, or another provider follow the change. The
 * candidate being tried stays the same one of the new plan; the plan as it
 * was is kept for a direct relay.
 */
function replan(deps: ReplanDeps, ex: Exchange, v: Extract<Verdict, { kind: 'rewrite' }>): Verdict | Promise<Verdict> {
  const input: PlanInput = { providers: deps.providers, presented: ex.presented as Presented, caller: ex.caller as Caller, facts: ex, ...(v.model !== undefined && { model: v.model }) };
  const planned = ex.row.plan(v.body === undefined ? ex.req : withBody(ex.req, v.body), input);
  return planned instanceof Promise ? planned.then((p) => adoptReplan(deps, ex, p)) : adoptReplan(deps, ex, planned);
}

function adoptReplan(deps: ReplanDeps, ex: Exchange, plan: Plan): Verdict {
  const unskilled = ex.plan as Plan;
  const taps = ex.replyTaps;
  const fallbacks = plan.fallbacks ?? [];
  const next = ex.attempt === 0 ? plan : { ...(fallbacks[ex.attempt - 1] as Fallback).candidate(), fallbacks: fallbacks.slice(ex.attempt), deadlineMs: plan.deadlineMs, skillChoices: plan.skillChoices };
  // a vendor key the caller passed through is the named provider's: routed elsewhere, the call takes that provider's stored key
  const chosen = next.provider === unskilled.provider ? next : { ...next, presented: { ...(next.presented ?? (ex.presented as Presented)), vendorKey: undefined, vendorCarrier: undefined } };
  tryCandidate(ex, chosen);
  ex.unskilled = unskilled;
  ex.replyTaps = taps;
  const call = ex.call as Call;
  for (const policy of deps.candidateChecks) policy.candidate?.(call);
  if (plan.unrouted) return { kind: 'refuse', error: plan.unrouted };
  return CONTINUE;
}

/** The caller's request with the body the skills left (what a second plan reads). */
const withBody = (req: GatewayRequest, body: Buffer): GatewayRequest => ({
  id: req.id,
  method: req.method,
  path: req.path,
  query: req.query,
  headers: req.headers,
  params: req.params,
  body,
  stages: req.stages,
  get log() {
    return req.log;
  },
  get logLines() {
    return req.logLines;
  },
});

/** The sink the reply is written to through the request's reply taps, the last tap outermost (it sees the reply first). */
function tapped(ex: Exchange, sink: ResponseSink): ResponseSink {
  const taps = ex.replyTaps;
  if (taps === undefined) return sink;
  let out = sink;
  for (const tap of taps) out = tap.wrap(out);
  return out;
}

export interface DispatchDeps {
  providers: Providers;
  storedKeys: StoredKeys;
  relay: RelayDeps;
  /** every policy with a check of the resolved location (residency) */
  located: readonly PolicyStage[];
  /** the operator's self-hosted servers, when GW_DESTINATIONS_FILE names any */
  destinations?: DestinationRouter;
  /** an org's several stored keys of one provider, tried in merit order */
  storedDestinations: StoredKeyDispatch;
}

/** Picks among an org's several stored keys of a provider (src/destinations/stored-keys.ts). */
export interface StoredKeyDispatch {
  picker(org: string, provider: ProviderId, keys: readonly StoredDestination[], place: PlaceKey): DestinationPicker | Promise<DestinationPicker>;
  /** whether a key is at its max_inflight now (the picker skips it) */
  atLimit(org: string, key: StoredDestination): boolean;
}

export const SERVED_BY_PIPELINE: HeaderList = [['x-gw-served-by', 'pipeline']];

/**
 * Credential → location → signed request → relay: sends the exchange's call
 * (or, for a direct relay, the body as planned) and keeps the outcome for
 * accounting. With `mayFallBack` and a further candidate, a failure before
 * the caller got a byte is held back (`ex.heldBack`) instead of answered.
 */
export async function dispatch(deps: DispatchDeps, ex: Exchange, servedBy: HeaderList, body: Buffer, mayFallBack: boolean): Promise<Answer | undefined> {
  const { req } = ex;
  const plan = ex.plan as Plan;
  const call = ex.call as NonNullable<Exchange['call']>;
  if (deps.destinations && deps.providers.servedByDestinations(call.provider)) return dispatchAcross(deps, selfHosted(deps.destinations, call.model), ex, servedBy, body, mayFallBack);
  let resolved;
  try {
    const found = resolveCredential(deps.storedKeys, req, call.org.org_id, plan.presented ?? (ex.presented as NonNullable<Exchange['presented']>), call.provider);
    resolved = found instanceof Promise ? await found : found;
  } catch (err) {
    if (plan.withoutCredential && err instanceof GatewayError && err.type === 'onboarding_incomplete') return plan.withoutCredential();
    throw err;
  }
  ex.credentialSource = resolved.credential.source;
  if (resolved.destinations) {
    const picker = deps.storedDestinations.picker(call.org.org_id, call.provider, resolved.destinations, (stored) => placed(deps, call, stored));
    return dispatchAcross(deps, picker instanceof Promise ? await picker : picker, ex, servedBy, body, mayFallBack);
  }
  const location = deps.providers.locate(call.provider, resolved.location, call.location);
  for (const policy of deps.located) policy.located?.(call, location);
  const unsigned: UpstreamRequest = {
    origin: deps.providers.origin(call.provider, location),
    path: typeof plan.path === 'string' ? plan.path : plan.path(location),
    method: 'POST',
    headers: upstreamHeaders(ex),
    body,
  };
  const adapter = deps.providers.get(call.provider);
  const authorized = adapter.authorize(unsigned, resolved.credential, location);
  await send(deps, ex, servedBy, authorized instanceof Promise ? await authorized : authorized, mayFallBack && plan.fallbacks?.length ? new FallbackSink(ex.res) : ex.res);
  return undefined;
}

/** where a stored key sends the call: resolved and checked, or the residency refusal that passes the key over */
export function placed(deps: DispatchDeps, call: CandidateCall, stored: Location): Location | GatewayError {
  const location = deps.providers.locate(call.provider, stored, call.location);
  try {
    for (const policy of deps.located) policy.located?.(call, location);
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  return location;
}

/** the caller's headers that go upstream, under those the vendor's format requires */
function upstreamHeaders(ex: Exchange): Record<string, string> {
  const plan = ex.plan as Plan;
  const forwarded = forwardHeaders(ex.req.headers, plan.keepHeaders);
  return plan.headers ? { ...forwarded, ...plan.headers } : forwarded;
}

/** relays the signed request and keeps the outcome for accounting; a FallbackSink holds back a failure before any byte that another attempt may mend */
async function send(deps: DispatchDeps, ex: Exchange, servedBy: HeaderList, request: UpstreamRequest, sink: ResponseSink): Promise<void> {
  const plan = ex.plan as Plan;
  const gatewayHeaders = plan.replyHeaders ? [...servedBy, ...plan.replyHeaders] : servedBy;
  ex.servedBy = servedBy.find(([name]) => name === 'x-gw-served-by')?.[1];
  const adapter = deps.providers.get((ex.call as NonNullable<Exchange['call']>).provider);
  ex.outcome = await relay(deps.relay, ex.req, tapped(ex, sink), adapter, request, { gatewayHeaders, transform: plan.reply, opaqueReplies: plan.opaqueReplies }, ex.takeSlot());
  if (sink instanceof FallbackSink) ex.heldBack = sink.heldBack;
}

/**
 * A call to a self-hosted model: the destinations pick the server (loading
 * the call's adapter there when needed) and hold its slot until the reply has
 * ended. No caller credential is needed; the server's own key, if any, rides.
 * A load the server refuses is answered with the server's reply. Only a
 * server that was sent nothing (it could not be connected to, or its origin
 * was full) moves the call on; a server's own answer stands, since it may
 * have run the call.
 */
function selfHosted(router: DestinationRouter, model: string | undefined): DestinationPicker {
  return {
    movesOn: { status: () => false, error: nothingSent },
    async next(tried) {
      const routed = await router.route(model, tried);
      if (routed === undefined || routed.kind === 'refused') return routed;
      const { destination_id, model_serving_route, price } = routed;
      return { id: destination_id, credential: routed.credential, origin: routed.origin, location: {}, served: { destination_id, model_serving_route, price }, release: routed.release };
    },
  };
}

/**
 * A call with several destinations, tried one at a time in the picker's
 * order: a failure the picker moves on from (before any byte reached the
 * caller) was held back, and the next destination is tried; when none is
 * left, the last failure is the answer (or, with a further candidate, the
 * next candidate is tried). Any other answer stands.
 */
async function dispatchAcross(deps: DispatchDeps, picker: DestinationPicker, ex: Exchange, servedBy: HeaderList, body: Buffer, mayFallBack: boolean): Promise<Answer | undefined> {
  const plan = ex.plan as Plan;
  const nextCandidate = mayFallBack && (plan.fallbacks?.length ?? 0) > 0;
  const { movesOn } = picker;
  const rule: HoldRule = { status: (s) => movesOn.status(s) || (nextCandidate && NEXT_CANDIDATE.status(s)), error: (e) => movesOn.error(e) || (nextCandidate && NEXT_CANDIDATE.error(e)) };
  ex.dispatchSteps = picker.steps;
  const tried = new Set<string>();
  let failed: FallbackSink | undefined;
  for (;;) {
    let picked;
    try {
      const next = picker.next(tried);
      picked = next instanceof Promise ? await next : next;
    } catch (err) {
      // the picker's 5xx (every destination at its own limit, none reachable to load an adapter, none with room for it)
      // comes before anything was sent: like a full origin, it leaves the call to a further candidate
      if (!(nextCandidate && err instanceof GatewayError && err.status >= 500)) throw err;
      ex.outcome = { status: err.status, usage: undefined, upstreamMs: 0, overheadMs: undefined, dispatched: false, streamed: false, error: err };
      ex.heldBack = true;
      return undefined;
    }
    if (picked === undefined) {
      // every destination was tried: the last failure is the answer, unless another candidate may mend it
      if (nextCandidate) ex.heldBack = true;
      else failed?.replay();
      return undefined;
    }
    if ('kind' in picked) return { kind: 'answer', status: picked.status, headers: [...picked.headers, ...servedBy], body: picked.body };
    tried.add(picked.id);
    const sink = new FallbackSink(ex.res, rule);
    try {
      await sendTo(deps, ex, picked, servedBy, body, sink);
    } finally {
      picked.release();
    }
    const outcome = sink.heldBack ? movedOnBy(movesOn, sink) : undefined;
    if (outcome === undefined) {
      picker.ended?.(picked.id, 'served');
      return undefined;
    }
    picker.ended?.(picked.id, outcome, sink.heldHeaders);
    ex.heldBack = false;
    failed = sink;
  }
}

/** why a held-back failure moves the call on to the next destination, or undefined when it does not */
function movedOnBy(movesOn: HoldRule, sink: FallbackSink): DispatchOutcome | undefined {
  if (sink.heldError !== undefined) return !movesOn.error(sink.heldError) ? undefined : sink.heldError instanceof OriginFull ? 'at_limit' : 'connect_failed';
  if (!movesOn.status(sink.heldStatus)) return undefined;
  return sink.heldStatus === 429 ? 'rate_limited' : 'server_error';
}

/** one attempt: the picked destination's signed request, relayed through `sink` */
async function sendTo(deps: DispatchDeps, ex: Exchange, picked: PickedDestination, servedBy: HeaderList, body: Buffer, sink: FallbackSink): Promise<void> {
  const plan = ex.plan as Plan;
  const call = ex.call as NonNullable<Exchange['call']>;
  ex.destination = picked.served;
  const { location } = picked;
  const unsigned: UpstreamRequest = {
    origin: picked.origin ?? deps.providers.origin(call.provider, location),
    path: typeof plan.path === 'string' ? plan.path : plan.path(location),
    method: 'POST',
    headers: upstreamHeaders(ex),
    body,
  };
  const authorized = deps.providers.get(call.provider).authorize(unsigned, picked.credential, location);
  await send(deps, ex, servedBy, authorized instanceof Promise ? await authorized : authorized, sink);
}

export const dispatchStage = (deps: DispatchDeps): Stage<Exchange> => ({
  name: 'dispatch',
  run: (ex) => dispatch(deps, ex, SERVED_BY_PIPELINE, (ex.call as NonNullable<Exchange['call']>).body, true).then((answer) => answer ?? CONTINUE),
});

/** An answer a stage gave (a cache hit, a local estimate), written whole or chunk by chunk through the reply taps. */
export function sendAnswer(ex: Exchange, a: Answer): void {
  const res = tapped(ex, ex.res);
  ex.servedBy = a.headers.find(([name]) => name === 'x-gw-served-by')?.[1];
  // a stored reply served again takes this request's per-call fields where the route's format has any
  const replay = a.replayed ? (ex.plan as Plan).reply?.replay : undefined;
  const fresh = (b: Buffer | string) => (replay ? replay(Buffer.from(b)) : b);
  if ('body' in a) res.send(a.status, a.headers, fresh(a.body));
  else {
    res.start(a.status, a.headers);
    for (const c of a.chunks) res.write(fresh(c));
    res.end();
  }
  ex.outcome = { status: a.status, usage: undefined, upstreamMs: 0, overheadMs: undefined, dispatched: false, streamed: 'chunks' in a };
}

export interface AccountingDeps {
  rows: RowSink;
  metrics: Metrics;
}

/** The finished call's row and metrics; returns its cost, which the reservations settle on (undefined: unknown). */
export function accountFor(deps: AccountingDeps, ex: Exchange): number | undefined {
  const outcome = ex.outcome as RelayOutcome;
  const call = ex.call as NonNullable<Exchange['call']>;
  const surface = ex.surface.id;
  if (outcome.overheadMs !== undefined) deps.metrics.observeOverhead(surface, outcome.overheadMs / 1000);
  const dispatch = dispatchSteps(deps, ex);
  const cost = account(deps.rows, {
    requestId: ex.req.id,
    endpoint: surface,
    provider: call.provider,
    model: call.model,
    caller: ex.caller as NonNullable<Exchange['caller']>,
    destination: ex.destination,
    dispatch,
    outcome,
    latencyMs: ex.req.stages.elapsedMs,
    requestBody: call.body,
    req: ex.req,
    dimensions: ex.dimensions,
    answer: ex.res.meta,
    failOpenReason: ex.failOpenReason,
    fromCache: ex.servedBy === 'cache',
    credentialSource: ex.credentialSource,
    skills: ex.skills.list,
    reservedUsd: ex.reservedUsd,
    rateLimitRemaining: ex.rateLimitRemaining,
  });
  deps.metrics.recordUsage(call.provider, outcome.usage, cost ?? 0);
  return cost;
}

/** what became of each destination of a call with several, counted in the metric; undefined for a call with one */
function dispatchSteps(deps: AccountingDeps, ex: Exchange): DispatchStep[] | undefined {
  const steps = ex.dispatchSteps?.();
  const provider = ex.call?.provider;
  if (steps && provider) for (const step of steps) deps.metrics.dispatchDestinations.inc({ provider, outcome: step.outcome });
  return steps;
}

/** The row of a request refused at `stage` by the gateway itself, read before its reservation is released. */
export function accountRefusalFor(deps: AccountingDeps, ex: Exchange, stage: StageName, error: GatewayError): void {
  const call = ex.call;
  accountRefusal(deps.rows, {
    requestId: ex.req.id,
    endpoint: ex.surface.id,
    provider: call?.provider,
    model: call?.model,
    caller: ex.caller as NonNullable<Exchange['caller']>,
    latencyMs: ex.req.stages.elapsedMs,
    req: ex.req,
    dimensions: ex.dimensions,
    answer: ex.res.meta,
    error,
    stage,
    dispatch: dispatchSteps(deps, ex),
    failOpenReason: ex.failOpenReason,
    credentialSource: ex.credentialSource,
    skills: ex.skills.list,
    reservedUsd: ex.reservedUsd,
    rateLimitRemaining: ex.rateLimitRemaining,
  });
}
