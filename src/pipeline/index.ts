import { asGatewayError, GatewayError } from '../errors.js';
import type { GatewayRequest, HeaderList, ResponseSink, Route } from '../http/types.js';
import type { Providers } from '../providers/index.js';
import type { Directory } from '../tenancy/directory.js';
import type { StoredKeys } from '../tenancy/vendor-keys.js';
import type { Logger } from '../telemetry/log.js';
import type { Metrics } from '../telemetry/metrics.js';
import type { Upstream } from '../upstream/client.js';
import type { OriginHealth } from '../upstream/health.js';
import { OriginFull, type UpstreamInflight } from '../upstream/inflight.js';
import { Exchange } from './exchange.js';
import type { RelayDeps, RelayLimits } from './relay.js';
import { roomStage } from './room.js';
import { runStages } from './runner.js';
import { accountFor, accountRefusalFor, authenticateStage, dispatch, dispatchStage, planStage, PolicyList, sendAnswer, skillsStage, tryCandidate, type AccountingDeps, type DispatchDeps, type StoredKeyDispatch } from './stages.js';
import { NO_SKILLS, type DestinationRouter, type Fallback, type PolicyStage, type RouteRow, type RowSink, type SkillsStage, type Stage, type Verdict } from './types.js';

export interface PipelineDeps {
  directory: Directory;
  providers: Providers;
  upstream: Upstream;
  metrics: Metrics;
  log: Logger;
  limits: RelayLimits;
  health: OriginHealth;
  /** requests in flight per upstream origin (dispatch-side shedding) */
  inflight: UpstreamInflight;
  storedKeys: StoredKeys;
  /** admission, in order: an overload-shedding hook first when there is one, then the tenant's policy (dedicated tenant, residency, model access, rate) */
  admission: readonly PolicyStage[];
  /** metering, after the skills: the spend-cap reservation on the body they produced */
  metering: readonly PolicyStage[];
  /** the skill engine; none by default */
  skills?: SkillsStage;
  /** where accounting writes each finished request's row */
  rows: RowSink;
  /** the operator's self-hosted model servers (GW_DESTINATIONS_FILE), if any */
  destinations?: DestinationRouter;
  /** an org's several stored keys of one provider, tried in merit order */
  storedDestinations: StoredKeyDispatch;
}

const SERVED_DIRECTLY: HeaderList = [
  ['x-gw-served-by', 'direct_passthrough'],
  ['x-gw-warnings', '_passthrough'],
];

/** Stages whose fault is the gateway's own machinery before dispatch: the call is relayed directly instead. */
const FAILS_OPEN = new Set(['admission', 'skills', 'metering']);

/**
 * The request skeleton, one for every surface: authenticate → plan →
 * admission → skills → metering → dispatch, run by one runner, then
 * accounting; dispatch's in-flight rule is also checked before the skills
 * (room.ts: a call with one origin takes its slot there, which dispatch
 * sends on), so a request dispatch would shed is shed before it costs a
 * skill pool task. A route row names its surface and its planner; the
 * pipeline does the rest. It knows no uWS and no undici types.
 *
 * Errors come from the edge (authentication, the plan's validation, the
 * tenant's policy) or from the provider. A fault of the gateway's own stages
 * (admission, skills, metering) relays the call as planned, before any
 * skill's change, directly to the provider (`x-gw-served-by:
 * direct_passthrough`); a fault in dispatch, or in that direct relay, is a
 * clean 502, never a second run of the code that failed.
 *
 * A plan with fallbacks (/v1/execute) is judged whole by admission, once:
 * the rate limit takes one token per request, and model access and residency
 * check every candidate before the first is sent. A candidate that fails
 * before the caller got a byte is accounted as its own call (its row, its
 * spend-cap reservation settled) and the run resumes at the skills stage
 * with the next: skills, metering and dispatch run for each candidate sent.
 */
export class Pipeline {
  private readonly stages: readonly Stage<Exchange>[];
  /** where the run resumes for a fallback candidate */
  private readonly candidateFrom: number;
  private readonly metering: PolicyList;
  private readonly dispatchDeps: DispatchDeps;
  private readonly accounting: AccountingDeps;

  constructor(private readonly deps: PipelineDeps) {
    const relayDeps: RelayDeps = { upstream: deps.upstream, metrics: deps.metrics, limits: deps.limits, health: deps.health, inflight: deps.inflight };
    this.dispatchDeps = { providers: deps.providers, storedKeys: deps.storedKeys, relay: relayDeps, located: [...deps.admission, ...deps.metering].filter((p) => p.located), destinations: deps.destinations, storedDestinations: deps.storedDestinations };
    this.accounting = { rows: deps.rows, metrics: deps.metrics };
    this.metering = new PolicyList('metering', deps.metering, 'metering_', true);
    this.stages = [
      authenticateStage(deps.directory),
      planStage(deps.providers),
      new PolicyList('admission', deps.admission, 'policy_'),
      roomStage(this.dispatchDeps),
      skillsStage(deps.skills ?? NO_SKILLS, { providers: deps.providers, candidateChecks: deps.admission.filter((p) => p.candidate) }),
      this.metering,
      dispatchStage(this.dispatchDeps),
    ];
    this.candidateFrom = this.stages.findIndex((s) => s.name === 'skills');
  }

  /** The front's routes for a surface's route rows. */
  routes(rows: readonly RouteRow[]): Route[] {
    return rows.map((row) => ({ method: row.method, path: row.path, surface: row.surface, handler: (req, res) => this.handle(req, res, row) }));
  }

  private handle(req: GatewayRequest, res: ResponseSink, row: RouteRow): Promise<void> | void {
    return this.run(new Exchange(req, res, row), 0);
  }

  private run(ex: Exchange, from: number): Promise<void> | void {
    let run: Verdict | Promise<Verdict>;
    try {
      run = runStages(this.stages, ex, from);
    } catch (err) {
      return this.recover(ex, err);
    }
    if (run instanceof Promise) {
      return run.then(
        (v) => this.finish(ex, v),
        (err: unknown) => this.recover(ex, err),
      );
    }
    return this.finish(ex, run);
  }

  /** the run's last verdict: an answer is sent, a refusal thrown to the front, a bypass relayed directly; then accounting, and the next candidate after a held-back failure */
  private finish(ex: Exchange, v: Verdict): Promise<void> | void {
    if (v.kind === 'refuse') throw this.refused(ex, v.error);
    if (v.kind === 'bypass') return this.relayDirectly(ex, { reason: v.reason });
    if (v.kind === 'answer') sendAnswer(ex, v);
    this.replyEnded(ex);
    this.account(ex);
    if (ex.heldBack) return this.tryNext(ex);
  }

  /** the reply taps learn the call's outcome before accounting (a tap's figure joins the row) */
  private replyEnded(ex: Exchange): void {
    const { replyTaps, outcome } = ex;
    if (replyTaps === undefined || outcome === undefined) return;
    for (const tap of replyTaps) tap.ended?.(outcome, ex.skills);
  }

  /** a held-back failure has a further candidate (dispatch holds back only then): the run resumes with it */
  private tryNext(ex: Exchange): Promise<void> | void {
    // the next candidate as planned from the caller's bytes: the skills run again for it, and their change is planned again
    const [next, ...rest] = ((ex.unskilled ?? ex.plan) as NonNullable<Exchange['plan']>).fallbacks as readonly [Fallback, ...Fallback[]];
    ex.req.log.info({ model: ex.call?.model, status: ex.outcome?.status, next: next.model }, 'trying the next candidate');
    ex.replyTaps = undefined;
    ex.attempt++;
    tryCandidate(ex, { ...next.candidate(), fallbacks: rest });
    return this.run(ex, this.candidateFrom);
  }

  /** A refusal releases what was reserved; a fault fails open, or is a clean 502 where it cannot. */
  private recover(ex: Exchange, err: unknown): Promise<void> | void {
    if (!(err instanceof GatewayError) && !ex.res.started && ex.plan && FAILS_OPEN.has(ex.at)) return this.relayDirectly(ex, { fault: err });
    // a fault before there is a plan has nothing to relay: the front answers it as internal_error
    if (err instanceof GatewayError || ex.res.started || !ex.plan) throw this.refused(ex, err);
    throw this.refused(ex, this.unrelayable(ex, err));
  }

  /**
   * A request ending in the gateway's own error: its row, when the caller is
   * known (an unknown key is no tenant's), with the status and type it is
   * answered with; then what it reserved is released. Returns `err`.
   */
  private refused(ex: Exchange, err: unknown): unknown {
    if (ex.caller) {
      const stage = ex.at;
      ex.at = 'accounting';
      try {
        accountRefusalFor(this.accounting, ex, stage, asGatewayError(err));
      } catch (fault) {
        ex.req.log.error({ err: fault }, 'accounting of a refused request failed');
      }
    }
    ex.settle(0);
    return err;
  }

  /**
   * Fail-open: the call goes to the provider as planned, before any
   * skill's change, without admission or metering (the resolved location's
   * residency is still checked: a refusal, not machinery), marked
   * `direct_passthrough`; accounted like any call, the reason logged, counted
   * and kept as the row's error_detail. A bypass verdict (a skill past its
   * ceiling, a full pool) takes the same way without being an internal fault.
   */
  private async relayDirectly(ex: Exchange, cause: { fault: unknown } | { reason: string }): Promise<void> {
    this.deps.metrics.passthrough.inc({ stage: ex.at });
    if ('fault' in cause) {
      ex.failOpenReason = `${ex.at}: ${cause.fault instanceof Error ? cause.fault.message : String(cause.fault)}`;
      ex.req.log.warn({ err: cause.fault, stage: ex.at }, 'internal fault: relaying directly to the provider');
    } else {
      ex.failOpenReason = cause.reason;
      ex.req.log.info({ stage: ex.at, reason: cause.reason }, 'bypass: relaying the call directly to the provider');
      await this.meterBypass(ex);
    }
    // none of the skills' changes: the call as planned from the caller's bytes, its reply untouched
    if (ex.unskilled) tryCandidate(ex, ex.unskilled);
    ex.replyTaps = undefined;
    const plan = ex.plan as NonNullable<Exchange['plan']>;
    const call = ex.call as NonNullable<Exchange['call']>;
    call.body = plan.body;
    call.model = plan.model;
    if (plan.unrouted) {
      ex.settle(0);
      throw plan.unrouted;
    }
    let answer;
    ex.at = 'dispatch';
    try {
      // the direct relay is the call's last try: its failure is answered
      answer = await dispatch(this.dispatchDeps, ex, SERVED_DIRECTLY, plan.body, false);
    } catch (err) {
      throw this.refused(ex, err instanceof GatewayError || ex.res.started ? err : this.unrelayable(ex, err));
    }
    if (answer) sendAnswer(ex, answer);
    this.account(ex);
  }

  /**
   * A bypass is no fault of metering: the call is still metered, so a spend
   * cap holds however busy the skill pool is. Its refusal is the tenant's
   * policy and answers as one; a fault in metering itself relays unmetered.
   */
  private async meterBypass(ex: Exchange): Promise<void> {
    ex.at = 'metering';
    try {
      await this.metering.run(ex);
    } catch (err) {
      if (err instanceof GatewayError) throw this.refused(ex, err);
      ex.req.log.warn({ err, stage: 'metering' }, 'internal fault: relaying directly to the provider');
    }
  }

  /** a fault in the relay machinery itself: a clean 502, logged with its cause */
  private unrelayable(ex: Exchange, err: unknown): GatewayError {
    ex.req.log.error({ err, stage: ex.at }, 'internal fault in dispatch: the call could not be relayed');
    return new GatewayError('upstream_unavailable', 'the gateway could not relay the call to the provider', { cause: err });
  }

  /** accounting: its own fault never becomes the caller's error (the reply has gone) */
  private account(ex: Exchange): void {
    ex.at = 'accounting';
    // a full origin is a shed only when it is the answer, not when another destination or candidate took the call
    const shed = !ex.heldBack && ex.outcome?.error instanceof OriginFull ? ex.outcome.error : undefined;
    if (shed) this.deps.inflight.answered();
    let cost: number | undefined;
    try {
      // nothing went upstream: dispatch refused the call, and its row says so (a refusal at dispatch, no upstream status)
      if (shed) accountRefusalFor(this.accounting, ex, 'dispatch', shed);
      else cost = accountFor(this.accounting, ex);
    } catch (err) {
      ex.req.log.error({ err }, 'accounting failed; the reply was sent');
    }
    // settled even when accounting failed (its cost unknown: the whole reservation is kept); a refusal spent nothing
    ex.settle(shed ? 0 : cost);
  }
}
