import { GatewayError } from '../errors.js';
import type { GatewayRequest, HeaderList, ResponseSink } from '../http/types.js';
import type { Location } from '../providers/adapter.js';
import type { Providers } from '../providers/index.js';
import type { ProviderCredential, ProviderId, UpstreamRequest } from '../providers/types.js';
import type { Surface } from '../surfaces/index.js';
import type { Directory } from '../tenancy/directory.js';
import type { Logger } from '../telemetry/log.js';
import type { Metrics } from '../telemetry/metrics.js';
import type { InspectorRing } from '../telemetry/ring.js';
import type { Upstream } from '../upstream/client.js';
import { account } from './accounting.js';
import { authenticate, presentedCredentials, type Caller, type Presented } from './auth.js';
import { forwardHeaders } from './forward-headers.js';
import { relay, type RelayLimits } from './relay.js';

export interface PipelineDeps {
  directory: Directory;
  providers: Providers;
  upstream: Upstream;
  metrics: Metrics;
  log: Logger;
  ring: InspectorRing;
  limits: RelayLimits;
}

/** One relayed call, as a surface describes it after its minimal parse. */
export interface RelayPlan {
  surface: Surface;
  caller: Caller;
  presented: Presented;
  provider: ProviderId;
  location?: Location;
  model: string | undefined;
  /** the vendor's path and query */
  path: string;
  body: Buffer;
  /** caller headers that go upstream although they are normally dropped */
  keepHeaders?: readonly string[];
}

const SERVED_BY_PIPELINE: HeaderList = [['x-gw-served-by', 'pipeline']];

/**
 * A request's way through the gateway: authenticate → (policy, skills: later
 * stages) → credential → dispatch → accounting. Surfaces call it; it knows no
 * uWS and no undici types.
 */
export class Pipeline {
  constructor(private readonly deps: PipelineDeps) {}

  authenticate(req: GatewayRequest, surface: Surface): { caller: Caller; presented: Presented } {
    req.stages.begin('auth');
    const presented = presentedCredentials(req, surface.carriers);
    const caller = authenticate(this.deps.directory, presented.devKey);
    req.stages.end();
    return { caller, presented };
  }

  async relay(req: GatewayRequest, res: ResponseSink, plan: RelayPlan): Promise<void> {
    const { providers, upstream, metrics, limits, ring } = this.deps;
    res.meta.tenant = plan.caller.org.org_id;
    res.meta.provider = plan.provider;
    res.meta.model = plan.model;
    const adapter = providers.get(plan.provider);
    const credential = this.credential(plan);
    const location = plan.location ?? {};
    const unsigned: UpstreamRequest = {
      origin: providers.origin(plan.provider, location),
      path: plan.path,
      method: 'POST',
      headers: forwardHeaders(req.headers, plan.keepHeaders),
      body: plan.body,
    };
    const request = await adapter.authorize(unsigned, credential, location);
    const outcome = await relay({ upstream, metrics, limits }, req, res, adapter, request, SERVED_BY_PIPELINE);
    if (outcome.status > 0 && res.meta.upstreamMs !== undefined) {
      metrics.overhead.observe({ surface: plan.surface.id }, Math.max(0, req.stages.elapsedMs - res.meta.upstreamMs) / 1000);
    }
    account(ring, res, {
      requestId: req.id,
      endpoint: plan.surface.id,
      provider: plan.provider,
      model: plan.model,
      caller: plan.caller,
      outcome,
      latencyMs: req.stages.elapsedMs,
    });
  }

  /** pass-through beats stored; neither is 402 onboarding_incomplete */
  private credential(plan: RelayPlan): ProviderCredential {
    const { vendorKey, vendorCarrier } = plan.presented;
    if (vendorKey !== undefined) {
      return { secret: vendorKey, scheme: vendorCarrier === 'authorization' ? 'bearer' : 'api_key', source: 'pass_through' };
    }
    throw new GatewayError('onboarding_incomplete', `no ${plan.provider} credential: send one with the request or store one with /api/v1/vendor_key/create`);
  }
}
