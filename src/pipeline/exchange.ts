import type { Presented } from '../http/credentials.js';
import type { GatewayRequest, ResponseSink, Surface } from '../http/types.js';
import type { BodyDimensions } from '../telemetry/row.js';
import type { Caller } from '../tenancy/types.js';
import type { OriginSlot } from '../upstream/inflight.js';
import type { RelayOutcome } from './relay.js';
import { ADMITTED, type Admission, type Call, type DispatchStep, type Plan, type ReplyTap, type RequestFacts, type RouteRow, type ServedBy, type SkillChoices, type SkillReports, type StageName } from './types.js';

/** One request's way through the stages: what each stage learnt, in one object per request. */
export class Exchange implements RequestFacts {
  at: StageName = 'authenticate';
  caller: Caller | undefined;
  /** the credentials as the caller presented them (a plan may read them otherwise: Plan.presented) */
  presented: Presented | undefined;
  /** the candidate being tried, with the fallbacks after it (planned again when a skill changed the request) */
  plan: Plan | undefined;
  /** the candidate as planned before the skills changed the request: what a direct relay sends */
  unskilled: Plan | undefined;
  /** which candidate is being tried: 0 the first, 1 the first fallback… */
  attempt = 0;
  call: Call | undefined;
  /** the reply, once dispatched (or answered by a stage) */
  outcome: RelayOutcome | undefined;
  /** x-gw-served-by of the reply, once dispatched */
  servedBy: string | undefined;
  /** the last attempt failed before the caller got a byte and was held back: the next candidate is tried */
  heldBack = false;
  /** the route's reading of the request's skill choices (the native envelope's), for the skills stage */
  skillChoices: SkillChoices | undefined;
  /** the route's reading of the usage dimensions the body names (the native envelope's `metadata`), for the row */
  dimensions: BodyDimensions | undefined;
  /** what each skill stage did (the trace, the headers and the row read it here) */
  readonly skills: SkillReports = { list: [] };
  /** the skills' taps on this attempt's reply (none: it passes untouched) */
  replyTaps: ReplyTap[] | undefined;
  /** where the provider credential came from, once resolved */
  credentialSource: 'pass_through' | 'stored' | undefined;
  /** set when the call was relayed directly because a stage of the gateway failed or a skill bypassed it: the row's error_detail */
  failOpenReason: string | undefined;
  /** the self-hosted destination that served the call, if one did */
  destination: ServedBy | undefined;
  /** a call with several destinations: what became of each (read at accounting) */
  dispatchSteps: (() => DispatchStep[]) | undefined;
  /** the call's spend-cap reservation (USD) until it is settled, for the decision record (undefined: none made) */
  reservedUsd: number | undefined;
  /** the rate limit's remaining requests once it admitted the request (undefined: not judged) */
  rateLimitRemaining: number | undefined;
  /** what admission and metering reserved, settled at accounting (undefined: nothing to settle) */
  private held: Admission[] | undefined;
  /** the slot at the call's origin taken before the skills (room.ts), until dispatch sends on it or the exchange ends without */
  private slot: OriginSlot | undefined;

  constructor(
    readonly req: GatewayRequest,
    readonly res: ResponseSink,
    readonly row: RouteRow,
  ) {}

  get surface(): Surface {
    return this.row.surface;
  }

  hold(a: Admission): void {
    if (a.remaining !== undefined) this.rateLimitRemaining = a.remaining;
    if (a.reservedUsd !== undefined) this.reservedUsd = (this.reservedUsd ?? 0) + a.reservedUsd;
    if (a.settle === ADMITTED.settle) return;
    (this.held ??= []).push(a);
  }

  /** keeps the call's origin slot for dispatch; a client that leaves gives it back at once (the call will not be sent) */
  holdSlot(slot: OriginSlot): void {
    this.slot = slot;
    this.res.onAbort(() => this.takeSlot()?.release());
  }

  /** the origin slot, now the relay's to send on or give back (undefined: none held) */
  takeSlot(): OriginSlot | undefined {
    const slot = this.slot;
    this.slot = undefined;
    return slot;
  }

  /**
   * Settles every reservation once, with the call's cost (0: released,
   * nothing was spent); read the reservation before. Every exchange ends
   * here, so an origin slot dispatch did not take is given back here too.
   */
  settle(cost: number | undefined): void {
    this.takeSlot()?.release();
    const held = this.held;
    this.held = undefined;
    this.reservedUsd = undefined;
    if (held) for (const a of held) a.settle(cost);
  }
}
