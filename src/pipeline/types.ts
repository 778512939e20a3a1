/**
 * The request skeleton's contract: the narrow call every stage sees, the
 * verdicts stages return, the plan a route makes, and the seams other parts
 * plug into (policy, skills, metering, rows). No uWS, no undici types.
 */
import type { GatewayError } from '../errors.js';
import type { GatewayRequest, HeaderList, ResponseSink, Surface } from '../http/types.js';
import type { Location } from '../providers/adapter.js';
import type { Providers } from '../providers/index.js';
import type { ProviderCredential, ProviderId, Usage } from '../providers/types.js';
import type { Presented } from '../http/credentials.js';
import type { BodyDimensions } from '../telemetry/row.js';
import type { Caller } from '../tenancy/types.js';
import type { ReplyTransform } from '../translate/types.js';

/** One call as every stage sees it: who, to whom, what. Credentials stay out. */
export interface Call {
  readonly org: Caller['org'];
  readonly key: Caller['key'];
  provider: ProviderId;
  /** the model the call names (undefined: the route names none, e.g. a cloudx path without one) */
  model: string | undefined;
  /** the bytes that go upstream, in the provider's format */
  body: Buffer;
  /** where the caller named (its location headers), before a stored key's */
  location: Location | undefined;
  /** performance.now() when the transport accepted the request (engine-entry shedding reads its wait) */
  readonly acceptedAt: number;
}

/** What admission judges a further candidate by: its call without the bytes. */
export type CandidateCall = Omit<Call, 'body'>;

/** The named stages, in the order one runner runs them for every surface (dispatch's in-flight check also runs, under its name, before the skills: room.ts). */
export const STAGE_NAMES = ['authenticate', 'plan', 'admission', 'skills', 'metering', 'dispatch', 'accounting'] as const;
export type StageName = (typeof STAGE_NAMES)[number];

/** What a stage decided. */
export type Verdict =
  /** go on to the next stage */
  | { readonly kind: 'continue' }
  /** go on with a new body and/or model (an acting skill's rewrite, a route) */
  | { readonly kind: 'rewrite'; readonly body?: Buffer; readonly model?: string }
  /**
   * answer now, without calling the vendor (a cache hit): a whole body, or a
   * stream's chunks in order; `replayed`: a reply stored for an earlier
   * request, whose per-call fields the route's reply transform freshens
   */
  | { readonly kind: 'answer'; readonly status: number; readonly headers: HeaderList; readonly body: Buffer | string; readonly replayed?: true }
  | { readonly kind: 'answer'; readonly status: number; readonly headers: HeaderList; readonly chunks: ReadonlyArray<Buffer | string>; readonly replayed?: true }
  /** refuse with a typed error (rendered in the surface's envelope) */
  | { readonly kind: 'refuse'; readonly error: GatewayError }
  /**
   * the gateway's own machinery could not finish its work (a skill stage past
   * its ceiling, a full skill pool): relay the call as planned, directly, with
   * `reason` as the row's error_detail; not an internal fault
   */
  | { readonly kind: 'bypass'; readonly reason: string };

export type Answer = Extract<Verdict, { kind: 'answer' }>;

/** the one continue verdict: continuing allocates nothing */
export const CONTINUE: Verdict = Object.freeze({ kind: 'continue' });

/** A stage: returns a verdict, synchronously when it can (the runner then does not wait). */
export interface Stage<C> {
  readonly name: StageName;
  run(ctx: C): Verdict | Promise<Verdict>;
}

/**
 * What the tenant's policy reserved for a call (a spend-cap reservation).
 * `settle` runs once the reply has ended, with the real cost, or undefined
 * when the vendor billed a call whose usage the gateway never saw. The
 * figures are what the request's decision record keeps of the policy.
 */
export interface Admission {
  settle(costUsd: number | undefined): void;
  /** the spend-cap reservation (USD) */
  readonly reservedUsd?: number;
  /** requests the org may still send at once, as the admitting replica holds them (rate limit) */
  readonly remaining?: number;
}

const settlesNothing = (): void => undefined;
export const ADMITTED: Admission = { settle: settlesNothing };
/** an admission that reserved nothing, carrying the rate limit's remaining requests */
export const admittedWithRemaining = (remaining: number): Admission => ({ settle: settlesNothing, remaining });

/**
 * A policy stage of admission or metering (src/policy/): throws a
 * GatewayError to refuse, or admits. Overload shedding is one more such
 * stage at the front of the admission list.
 */
export interface PolicyStage {
  readonly name: string;
  admit(call: Call): Promise<Admission> | Admission;
  /** re-checks once the upstream location is resolved (a stored key's region): throws to refuse */
  located?(call: CandidateCall, location: Location): void;
  /**
   * Checks a further candidate of an admitted call (a fallback model the
   * route may try instead): throws to refuse; takes no token and reserves
   * nothing. Absent on a policy that judges the request, not the call (the
   * tenant, the rate). A further candidate has no body yet: it is made only
   * if the candidate is tried.
   */
  candidate?(call: CandidateCall): void;
}

/** One skill stage's report on one request, as the trace, the headers and the row carry it. */
export interface SkillRecord {
  readonly skill: string;
  readonly mode: string;
  readonly arm: string | null;
  readonly outcome: string;
  readonly ms: number;
  readonly detail?: Record<string, unknown>;
}

/**
 * A request's skill reports, in ONE place (the exchange): the stages run
 * before dispatch, then those run beside it as they settle (those that settle
 * after the reply has ended miss its row: accounting does not wait for them).
 */
export interface SkillReports {
  readonly list: SkillRecord[];
}

/**
 * A skill's hold on the reply (src/skills/): it sees what the caller is sent,
 * after any translation, and may rewrite it (PII placeholders restored) or
 * keep a copy (the semantic cache). Dispatch and a stage's answer write
 * through every tap of the request.
 */
export interface ReplyTap {
  /** the sink the reply is written to, seen through this tap */
  wrap(sink: ResponseSink): ResponseSink;
  /**
   * The call has ended (before accounting): a tap that held the reply's last
   * write back lets it go; `reports` may still gain a figure for the row.
   */
  ended?(outcome: { readonly status: number; readonly usage: Usage | undefined }, reports: SkillReports): void;
}

/** What the skills stage sees of a request. */
export interface SkillInput {
  readonly req: GatewayRequest;
  readonly surface: Surface;
  readonly call: Call;
  /** headers added to whatever answers the request (x-gw-skill-…); `started` once the status line is written */
  readonly res: Pick<ResponseSink, 'extraHeaders' | 'started'>;
  /** where the stage records what each skill did */
  readonly skills: SkillReports;
  /** the route's reading of the request's skill choices, when it made one */
  readonly skillChoices: SkillChoices | undefined;
  /** the usage dimensions the body names (the native envelope's `metadata`): its session draws the canary arms */
  readonly dimensions: BodyDimensions | undefined;
  /** the credentials as the caller presented them (a vendor key passed through reaches the call's provider) */
  readonly presented: Presented | undefined;
  /** where the stage leaves its taps on the reply (none: the reply passes untouched) */
  replyTaps: ReplyTap[] | undefined;
}

/** The skills seam: the skill engine implements it; the default reports nothing and changes nothing. */
export interface SkillsStage {
  run(input: SkillInput): Verdict | Promise<Verdict>;
}

export const NO_SKILLS: SkillsStage = { run: () => CONTINUE };

/** Where finished requests' rows go at accounting: the ring, the durable streams and the metrics. */
export type { RowSink } from '../telemetry/row-sink.js';

/**
 * What the pipeline learns about a request after its plan, read by a reply
 * transform when it writes the reply (not when the route plans it).
 */
export interface RequestFacts {
  /** x-gw-served-by of the reply: `pipeline`, or `direct_passthrough` when the gateway's own stages failed open; undefined before dispatch */
  readonly servedBy: string | undefined;
  /** what each skill stage did on this request (the engine's reports, as they arrive) */
  readonly skills: SkillReports;
}

/** Where a call to a self-hosted model went: the row names it. */
export interface ServedBy {
  destination_id: string;
  /** `selfhosted:<destination>/<adapter or base model>` */
  model_serving_route: string;
  /** the destination's own prices, per million tokens */
  price: { input: number; output: number };
}

/** A destination chosen for a call, its slot (and adapter) held until `release`. */
export interface RoutedCall extends ServedBy {
  readonly kind: 'routed';
  origin: string;
  credential: ProviderCredential;
  release(): void;
}

/** The model server refused to load the call's adapter: its answer is relayed as it is. */
export interface RefusedByServer {
  readonly kind: 'refused';
  status: number;
  headers: HeaderList;
  body: Buffer;
}

/** Which failures of an attempt another attempt may mend: held back rather than written. */
export interface HoldRule {
  status(status: number): boolean;
  error(err: unknown): boolean;
}

/**
 * What became of one destination of a call: `served` (its answer went to the
 * caller, whatever the status), passed over (`at_limit`: it or its origin
 * at its concurrency limit; `cooling`: it failed recently and another served;
 * `region_excluded`: its region is outside GW_ALLOWED_REGIONS), or failed
 * before any byte reached the caller (`connect_failed`, `rate_limited`: 429,
 * `server_error`: 5xx).
 */
export type DispatchOutcome = 'served' | 'at_limit' | 'cooling' | 'region_excluded' | 'connect_failed' | 'rate_limited' | 'server_error';
export interface DispatchStep {
  destination: string;
  outcome: DispatchOutcome;
}

/** One destination a picker chose for an attempt: its credential and where it goes, its slot held until `release`. */
export interface PickedDestination {
  readonly id: string;
  credential: ProviderCredential;
  /** the destination's own origin (a self-hosted server); absent: the provider's, at `location` */
  origin?: string;
  /** where the call goes, resolved and checked against residency */
  location: Location;
  /** a self-hosted destination, priced at its own rates in the row */
  served?: ServedBy;
  release(): void;
}

/** Where a stored key sends a call: its location resolved and checked, or the residency refusal that passes the key over. */
export type PlaceKey = (stored: Location) => Location | GatewayError;

/**
 * Where a call with several destinations goes, one attempt at a time
 * (src/pipeline/merit-dispatch.ts runs the attempts): the next destination
 * in merit order not in `tried`, or undefined when none is left; throws a
 * dispatch-side 503 overloaded when every one is at its concurrency limit.
 */
export interface DestinationPicker {
  next(tried: ReadonlySet<string>): PickedDestination | RefusedByServer | undefined | Promise<PickedDestination | RefusedByServer | undefined>;
  /** the failures, before any byte reached the caller, after which the next destination is tried */
  readonly movesOn: HoldRule;
  /** an attempt's end: its failure moved the call on (`outcome`, with the vendor answer's headers when it was one), or its answer stood (`served`) */
  ended?(id: string, outcome: DispatchOutcome, headers?: HeaderList): void;
  /** what became of each destination, for the row, the decision record and the metric (read unbound); absent when the picker keeps none */
  readonly steps?: () => DispatchStep[];
}

/**
 * The operator's own model servers (src/destinations/): picks the
 * destination of a call to a self-hosted model, in merit order, loading its
 * adapter there when needed. Refuses with 507 adapter_unavailable or a
 * dispatch-side 503 overloaded. Destinations named in `tried` (they could not
 * be connected to) are passed over; undefined when no other holds the model.
 */
export interface DestinationRouter {
  route(model: string | undefined, tried?: ReadonlySet<string>): Promise<RoutedCall | RefusedByServer | undefined>;
  /**
   * The servers a call for `model` would be walked over, as they are now
   * (the check before the skills, src/pipeline/room.ts); undefined where
   * route() decides by more than calls in flight (an adapter, whose load
   * may find no room) or refuses (no server holds the model).
   */
  slots(model: string | undefined): DestinationSlot[] | undefined;
}

/** One server a call could go to: its origin, and whether it is at its own max_inflight (route() skips it). */
export interface DestinationSlot {
  origin: string;
  atLimit: boolean;
}

/** What a route's planner is given. */
export interface PlanInput {
  readonly providers: Providers;
  readonly presented: Presented;
  readonly caller: Caller;
  readonly facts: RequestFacts;
  /**
   * Set when the call is planned again after the skills: the model a skill
   * routed it to, in place of the one the request names (a route that reads
   * its model from the path reads this instead; a body naming its model
   * already names this one)
   */
  readonly model?: string;
}

/** One way to send a call: the route's first choice, or one of its fallbacks. */
export interface Candidate {
  provider: ProviderId;
  model: string | undefined;
  body: Buffer;
  /** where the caller named (checked by the provider) */
  location?: Location;
  /** the vendor's path and query; a function when it depends on the resolved location */
  path: string | ((location: Location) => string);
  /** the credentials as this route reads them, when it reads them otherwise than presented (the OpenAI SDK's bearer is an API key) */
  presented?: Presented;
  /** caller headers that go upstream although they are normally dropped */
  keepHeaders?: readonly string[];
  /** headers the vendor's format requires, over the caller's (a translated call's anthropic-version) */
  headers?: Readonly<Record<string, string>>;
  /** set on a translated call: rewrites the vendor's reply into the caller's format */
  reply?: ReplyTransform;
  /** the vendor does not bill the call (token counting): nothing is metered */
  costless?: true;
  /** the route relays arbitrary vendor paths whose replies may be audio or text (cloudx generic) */
  opaqueReplies?: true;
  /** added to the relayed reply's headers */
  replyHeaders?: HeaderList;
  /** the answer when no vendor credential exists at all (count_tokens' local estimate); else 402 */
  withoutCredential?(): Answer;
}

/** How a route sends one call, as its planner decides from the request. */
/** A request's own skill choices as its route already read them (the native envelope's), so the skills stage need not parse the body again. */
export interface SkillChoices {
  /** per-request modes by skill, validated and checked against the key's locks */
  readonly overrides: Readonly<Record<string, 'off' | 'shadow' | 'prod'>>;
}

/**
 * A further candidate as planned: checked whole (its 400s raised with the
 * plan) and addressed, so admission can judge it before the first is sent;
 * its body is made only when it is tried (made at once, one body per
 * candidate cost a translated conversation with eight fallbacks 15× its size).
 */
export interface Fallback {
  provider: ProviderId;
  model: string | undefined;
  location?: Location;
  /** the candidate, its body made now */
  candidate(): Candidate;
}

export interface Plan extends Candidate {
  /**
   * Candidates tried in order, each as its own call (skills, metering,
   * dispatch, accounting; admission judged them all with the first), when
   * the one before could not be reached, or answered 429 or 5xx, before
   * any byte reached the caller. Once the status line is out nothing is retried.
   */
  fallbacks?: readonly Fallback[];
  /** the caller's own limit (ms) on the wait for the answer to begin: past it, 504 gateway_timeout */
  deadlineMs?: number;
  skillChoices?: SkillChoices;
  /** usage dimensions the body names (the native envelope's `metadata`): the row takes each over its header */
  dimensions?: BodyDimensions;
  /**
   * The request names no model (`target.model` absent, `model: "auto"`) and
   * leaves the choice to model_routing: when no skill routes the call, this
   * is the answer (402 onboarding_incomplete), and nothing goes upstream.
   */
  unrouted?: GatewayError;
}

export type Planner = (req: GatewayRequest, input: PlanInput) => Plan | Promise<Plan>;

/** A relayed route: its method and path, the surface it belongs to, and how it plans a call. */
export interface RouteRow {
  method: 'POST';
  path: string;
  surface: Surface;
  plan: Planner;
}
