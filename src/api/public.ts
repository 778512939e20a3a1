import type { Route } from '../http/types.js';
import { CATALOG, type CatalogModel } from '../providers/catalog.js';
import type { Providers } from '../providers/index.js';
import { SURFACES } from '../surfaces/index.js';
import type { Metrics } from '../telemetry/metrics.js';
import type { ProviderId } from '../providers/types.js';
import type { OriginHealth } from '../upstream/health.js';
import { sendJson } from './respond.js';

export interface HealthSources {
  origins: OriginHealth;
  inFlight(): number;
  /** skills and policy stages active on this deployment */
  levers(): Record<string, unknown>;
  metrics: Metrics;
  startedAt: number;
  uwsNative: boolean;
  /** whether /v1/models lists a self-hosted model: the destinations decide (none listed without them) */
  listsSelfHosted?(m: CatalogModel): boolean;
}

const surface = SURFACES.public;

/** GET /healthz, GET /v1/models and (unless disabled) GET /metrics: no key needed. */
export function publicRoutes(providers: Providers, health: HealthSources, metricsPublic: boolean): Route[] {
  const routes: Route[] = [
    {
      method: 'GET',
      path: '/healthz',
      surface,
      handler(_req, res) {
        const loopP99Ms = health.metrics.loopDelay.percentile(99) / 1e6;
        sendJson(res, 200, {
          status: 'ok',
          pid: process.pid,
          uptime_s: Math.round((Date.now() - health.startedAt) / 1000),
          uws_native: health.uwsNative,
          levers: health.levers(),
          overload: { in_flight: health.inFlight(), event_loop_delay_p99_ms: Math.round(loopP99Ms * 100) / 100 },
        });
      },
    },
    {
      method: 'GET',
      path: '/v1/models',
      surface,
      handler(_req, res) {
        // a provider whose default destination recent calls could not reach is left out for now
        const reachable = (p: ProviderId) => {
          const origin = providers.defaultOrigin(p);
          return origin === undefined || health.origins.reachable(origin);
        };
        const served = new Set(providers.ids().filter(reachable));
        const listed = (m: CatalogModel) => !providers.servedByDestinations(m.provider) || health.listsSelfHosted?.(m) === true;
        const data = CATALOG.filter((m) => served.has(m.provider) && listed(m)).map((m) => ({ id: m.id, object: 'model', owned_by: m.provider, provider: m.provider }));
        sendJson(res, 200, { object: 'list', data });
      },
    },
  ];
  if (metricsPublic) routes.push(metricsRoute(health.metrics));
  return routes;
}

function metricsRoute(metrics: Metrics): Route {
  return {
    method: 'GET',
    path: '/metrics',
    surface,
    async handler(_req, res) {
      const text = await metrics.registry.metrics();
      res.send(200, [['content-type', metrics.registry.contentType]], text);
    },
  };
}
