import { GatewayError } from '../errors.js';
import type { GatewayRequest, HeaderList, ResponseSink, Surface } from '../http/types.js';
import type { Location, ProviderAdapter } from '../providers/adapter.js';
import type { Providers } from '../providers/index.js';
import type { ProviderId, UpstreamRequest } from '../providers/types.js';
import type { Directory } from '../tenancy/directory.js';
import type { Logger } from '../telemetry/log.js';
import type { Metrics } from '../telemetry/metrics.js';
import type { RowSink } from '../telemetry/row-sink.js';
import type { Upstream } from '../upstream/client.js';
import type { OriginHealth } from '../upstream/health.js';
import type { ReplyTransform } from '../translate/types.js';
import { account } from './accounting.js';
import { resolveCredential, type StoredKeys } from './credentials.js';
import { admitAll, type Admission, type PolicyStage } from './policy.js';
import { authenticate, presentedCredentials, type Caller, type Presented } from './auth.js';
import { forwardHeaders } from './forward-headers.js';
import { relay, type RelayDeps, type RelayLimits } from './relay.js';

export interface PipelineDeps {
  directory: Directory;
  providers: Providers;
  upstream: Upstream;
  metrics: Metrics;
  log: Logger;
  /** where each finished call's row goes (the ring and the telemetry streams) */
  rows: RowSink;
  limits: RelayLimits;
  health: OriginHealth;
  storedKeys: StoredKeys;
  /** the tenant's policy, in the order main.ts gives (dedicated tenant, residency, model access, rate, spend cap) */
  policy: readonly PolicyStage[];
}

/** One relayed call, as a surface describes it after its minimal parse. */
export interface RelayPlan {
  surface: Surface;
  caller: Caller;
  presented: Presented;
  provider: ProviderId;
  location?: Location;
  model: string | undefined;
  /** the vendor's path and query; a function when it depends on the resolved location (a stored key's project or region) */
  path: string | ((location: Location) => string);
  body: Buffer;
  /** caller headers that go upstream although they are normally dropped */
  keepHeaders?: readonly string[];
  /** headers the vendor's format requires, over the caller's (a translated call's anthropic-version) */
  headers?: Readonly<Record<string, string>>;
  /** set on a translated call: rewrites the vendor's reply into the caller's format */
  reply?: ReplyTransform;
  /** the vendor does not bill the call (token counting): nothing is reserved against a spend cap */
  costless?: true;
  /** the route relays arbitrary vendor paths whose replies may be audio or text (cloudx generic) */
  opaqueReplies?: true;
}

const SERVED_BY_PIPELINE: HeaderList = [['x-gw-served-by', 'pipeline']];
const SERVED_DIRECTLY: HeaderList = [
  ['x-gw-served-by', 'direct_passthrough'],
  ['x-gw-warnings', '_passthrough'],
];

/**
 * A request's way through the gateway: authenticate → policy admission →
 * credential → dispatch → accounting, with the policy settled on the real
 * cost. Surfaces call it; it knows no uWS and no undici types.
 */
export class Pipeline {
  /** what the relay needs, put together once rather than per call */
  private readonly relayDeps: RelayDeps;

  constructor(private readonly deps: PipelineDeps) {
    this.relayDeps = { upstream: deps.upstream, metrics: deps.metrics, limits: deps.limits, health: deps.health };
  }

  authenticate(req: GatewayRequest, surface: Surface): { caller: Caller; presented: Presented } {
    req.stages.begin('auth');
    const presented = presentedCredentials(req, surface.carriers);
    const caller = authenticate(this.deps.directory, presented.devKey);
    req.stages.end();
    return { caller, presented };
  }

  async relay(req: GatewayRequest, res: ResponseSink, plan: RelayPlan): Promise<void> {
    res.meta.tenant = plan.caller.org.org_id;
    res.meta.provider = plan.provider;
    res.meta.model = plan.model;
    const adapter = this.deps.providers.get(plan.provider);
    let admission: Admission;
    try {
      const admitted = admitAll(this.deps.policy, req, plan);
      admission = admitted instanceof Promise ? await admitted : admitted;
    } catch (err) {
      if (err instanceof GatewayError) throw err;
      await this.passthrough(req, res, plan, adapter, 'policy', err);
      return;
    }
    let cost: number | undefined = 0;
    try {
      cost = await this.dispatch(req, res, plan, adapter, SERVED_BY_PIPELINE);
    } catch (err) {
      if (err instanceof GatewayError || res.started) throw err;
      // settled below with what the direct call cost
      cost = await this.passthrough(req, res, plan, adapter, 'dispatch', err);
    } finally {
      admission.settle(cost);
    }
  }

  /**
   * Fail-open: a fault in the gateway's own machinery (a policy stage,
   * the dispatch machinery) never becomes an error. The call goes to the
   * provider as the caller sent it, without policy admission (residency is
   * still checked on the resolved location: it is a refusal, not machinery),
   * marked `x-gw-served-by: direct_passthrough`; it is accounted like any
   * call, and the reason is logged and counted.
   */
  private async passthrough(req: GatewayRequest, res: ResponseSink, plan: RelayPlan, adapter: ProviderAdapter, stage: string, err: unknown): Promise<number | undefined> {
    this.deps.metrics.passthrough.inc({ stage });
    req.log.warn({ err, stage }, 'internal fault: relaying directly to the provider');
    return this.dispatch(req, res, plan, adapter, SERVED_DIRECTLY, `${stage}: ${err instanceof Error ? err.message : String(err)}`);
  }

  /** credential → request → relay → accounting; returns the call's cost (undefined: billed, usage unseen) */
  private async dispatch(req: GatewayRequest, res: ResponseSink, plan: RelayPlan, adapter: ProviderAdapter, servedBy: HeaderList, failOpenReason?: string): Promise<number | undefined> {
    const { providers, metrics, rows } = this.deps;
    const resolved = resolveCredential(this.deps.storedKeys, req, plan.caller, plan.presented, plan.provider);
    const { credential, location: storedLocation } = resolved instanceof Promise ? await resolved : resolved;
    const location = { ...adapter.defaultLocation, ...storedLocation, ...plan.location };
    for (const stage of this.deps.policy) stage.located?.(plan, location);
    const unsigned: UpstreamRequest = {
      origin: providers.origin(plan.provider, location),
      path: typeof plan.path === 'string' ? plan.path : plan.path(location),
      method: 'POST',
      headers: plan.headers ? { ...forwardHeaders(req.headers, plan.keepHeaders), ...plan.headers } : forwardHeaders(req.headers, plan.keepHeaders),
      body: plan.body,
    };
    const authorized = adapter.authorize(unsigned, credential, location);
    const request = authorized instanceof Promise ? await authorized : authorized;
    const outcome = await relay(this.relayDeps, req, res, adapter, request, { gatewayHeaders: servedBy, transform: plan.reply, opaqueReplies: plan.opaqueReplies });
    if (outcome.overheadMs !== undefined) metrics.observeOverhead(plan.surface.id, outcome.overheadMs / 1000);
    const cost = account(rows, {
      requestId: req.id,
      endpoint: plan.surface.id,
      provider: plan.provider,
      model: plan.model,
      caller: plan.caller,
      outcome,
      latencyMs: req.stages.elapsedMs,
      req,
      answer: res.meta,
      failOpenReason,
      credentialSource: credential.source,
    });
    metrics.recordUsage(plan.provider, outcome.usage, cost ?? 0);
    return cost;
  }
}
