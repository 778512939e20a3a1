import type { Presented } from '../http/credentials.js';
import type { GatewayRequest, HeaderList, ResponseSink, Surface } from '../http/types.js';
import type { Caller } from '../tenancy/types.js';
import type { RelayOutcome } from './relay.js';
import { ADMITTED, type Admission, type Call, type Plan, type RouteRow, type ServedBy, type StageName } from './types.js';

/** One request's way through the stages: what each stage learnt, in one object per request. */
export class Exchange {
  at: StageName = 'authenticate';
  caller: Caller | undefined;
  presented: Presented | undefined;
  plan: Plan | undefined;
  call: Call | undefined;
  /** the reply, once dispatched (or answered by a stage) */
  outcome: RelayOutcome | undefined;
  /** the self-hosted destination that served the call, if one did */
  destination: ServedBy | undefined;
  /** x-gw-served-by of the reply */
  servedBy: HeaderList | undefined;
  /** what admission and metering reserved, settled at accounting (undefined: nothing to settle) */
  private held: Admission[] | undefined;

  constructor(
    readonly req: GatewayRequest,
    readonly res: ResponseSink,
    readonly row: RouteRow,
  ) {}

  get surface(): Surface {
    return this.row.surface;
  }

  hold(a: Admission): void {
    if (a === ADMITTED) return;
    (this.held ??= []).push(a);
  }

  /** settles every reservation once, with the call's cost (0: released, nothing was spent) */
  settle(cost: number | undefined): void {
    const held = this.held;
    this.held = undefined;
    if (held) for (const a of held) a.settle(cost);
  }
}
