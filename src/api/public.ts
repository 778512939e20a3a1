import type { Route } from '../http/types.js';
import { CATALOG, type CatalogModel } from '../providers/catalog.js';
import type { Providers } from '../providers/index.js';
import { SURFACES } from '../surfaces/index.js';
import type { LoadMonitor } from '../telemetry/load-monitor.js';
import type { Metrics } from '../telemetry/metrics.js';
import type { ProviderId } from '../providers/types.js';
import { PER_KEY_SKILLS } from '../tenancy/skills.js';
import type { OriginHealth } from '../upstream/health.js';
import { sendJson } from './respond.js';

/** The guardrail stages a request can pass through: the regex stage and the model classifier. */
const GUARDRAIL_STAGES = ['regex', 'classifier'] as const;

export interface LeverSources {
  /** names of the policy stages the pipeline runs, in order */
  policy: readonly string[];
  /** the request-path stages running on this replica: per-key skills by id, guardrails as `guardrail_<stage>` (none while the skills engine is not built) */
  running: ReadonlySet<string>;
  /** settings that configure levers, reported as set whether or not the lever runs */
  configured: Record<string, unknown>;
}

/**
 * /healthz `levers`: what runs, from the running stages and the policy list,
 * for every per-key skill and guardrail stage the gateway knows; a lever
 * that is configured but not running says `not_running`, never `on`.
 */
export function leverReport(src: LeverSources): Record<string, unknown> {
  const state = (stage: string) => (src.running.has(stage) ? 'running' : 'not_running');
  return {
    skills: Object.fromEntries(PER_KEY_SKILLS.map((s) => [s, state(s)])),
    guardrails: Object.fromEntries(GUARDRAIL_STAGES.map((g) => [g, state(`guardrail_${g}`)])),
    policy: src.policy,
    configured: src.configured,
  };
}

export interface HealthSources {
  origins: OriginHealth;
  /** skills, guardrails and policy stages running on this deployment (leverReport) */
  levers(): Record<string, unknown>;
  metrics: Metrics;
  /** the replica's load: /healthz `overload`, /readyz */
  load: LoadMonitor;
  startedAt: number;
  uwsNative: boolean;
  /** whether /v1/models lists a self-hosted model: the destinations decide (none listed without them) */
  listsSelfHosted?(m: CatalogModel): boolean;
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
