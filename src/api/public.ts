import type { Route } from '../http/types.js';
import { CATALOG } from '../providers/catalog.js';
import type { Providers } from '../providers/index.js';
import { SURFACES } from '../surfaces/index.js';
import type { LoadMonitor } from '../telemetry/load-monitor.js';
import type { Metrics } from '../telemetry/metrics.js';
import type { ProviderId } from '../providers/types.js';
import type { OriginHealth } from '../upstream/health.js';
import { sendJson } from './respond.js';

export interface HealthSources {
  origins: OriginHealth;
  /** skills and policy stages active on this deployment */
  levers(): Record<string, unknown>;
  metrics: Metrics;
  /** the replica's load: /healthz `overload`, /readyz */
  load: LoadMonitor;
  startedAt: number;
  uwsNative: boolean;
}

const surface = SURFACES.public;

/** GET /healthz, /livez, /readyz, GET /v1/models and (unless disabled) GET /metrics: no key needed. */
export function publicRoutes(providers: Providers, health: HealthSources, metricsPublic: boolean): Route[] {
  const routes: Route[] = [
    {
      method: 'GET',
      path: '/healthz',
      surface,
      handler(_req, res) {
        sendJson(res, 200, {
          status: 'ok',
          pid: process.pid,
          uptime_s: Math.round((Date.now() - health.startedAt) / 1000),
          uws_native: health.uwsNative,
          levers: health.levers(),
          overload: health.load.report(),
        });
      },
    },
    // for orchestrators: alive while the process answers at all
    { method: 'GET', path: '/livez', surface, handler: (_req, res) => sendJson(res, 200, { status: 'ok' }) },
    {
      method: 'GET',
      path: '/readyz',
      surface,
      // not ready while draining on SIGTERM, nor while shedding: a balancer sends the traffic elsewhere
      handler(_req, res) {
        const { load } = health;
        if (load.ready) return sendJson(res, 200, { status: 'ready' });
        sendJson(res, 503, { status: load.isDraining ? 'draining' : 'shedding' });
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
        const data = CATALOG.filter((m) => served.has(m.provider)).map((m) => ({ id: m.id, object: 'model', owned_by: m.provider, provider: m.provider }));
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
