import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SettingsSchema } from '../../src/settings.js';
import { parseBlockYaml, type Yaml } from '../helpers/yaml-block.js';

/**
 * deploy/: the compose file and the configs it mounts agree with each other
 * and with the gateway. Checked here without a container engine; when
 * `docker compose` is installed, its own `config` check runs too.
 */
const DEPLOY = fileURLToPath(new URL('../../deploy/', import.meta.url));
const read = (file: string): Yaml => parseBlockYaml(readFileSync(join(DEPLOY, file), 'utf8'));

type Obj = Record<string, Yaml>;
const obj = (v: Yaml | undefined, what: string): Obj => {
  assert.ok(v !== null && v !== undefined && typeof v === 'object' && !Array.isArray(v), `${what}: a map`);
  return v;
};
const list = (v: Yaml | undefined, what: string): Yaml[] => {
  assert.ok(Array.isArray(v), `${what}: a list`);
  return v;
};

const compose = obj(read('docker-compose.yml'), 'docker-compose.yml');
const services = obj(compose['services'], 'services');
const gateway = obj(services['gateway'], 'services.gateway');
const env = obj(gateway['environment'], 'gateway.environment');
/** `./host:container[:ro]` bind mounts of a service, resolved against deploy/ */
const binds = (service: string) =>
  list(obj(services[service], service)['volumes'], `${service}.volumes`)
    .map(String)
    .filter((v) => v.startsWith('./'))
    .map((v) => {
      const [host, container] = v.split(':') as [string, string];
      return { host: join(DEPLOY, host), container };
    });
const mountedAt = (service: string, hostFile: string) => binds(service).find((b) => b.host === join(DEPLOY, hostFile))?.container;

describe('deploy/docker-compose.yml', () => {
  it('runs the gateway (two replicas), Redis with AOF, Prometheus and Grafana', () => {
    assert.deepEqual(Object.keys(services).sort(), ['gateway', 'grafana', 'prometheus', 'redis']);
    assert.equal(env['GW_WORKERS'], '2');
    const command = list(obj(services['redis'], 'redis')['command'], 'redis.command').map(String);
    assert.equal(command[command.indexOf('--appendonly') + 1], 'yes');
    const volumes = list(obj(services['redis'], 'redis')['volumes'], 'redis.volumes').map(String);
    assert.ok(volumes.some((v) => /^[\w-]+:\/data$/.test(v) && v.split(':')[0]! in obj(compose['volumes'], 'volumes')), 'the AOF lives on a named volume');
  });

  it('gives the gateway only settings it knows, Redis by its service name, and the secrets from the environment', () => {
    const unknown = Object.keys(env).filter((k) => k.startsWith('GW_') && !(k in SettingsSchema.properties));
    assert.deepEqual(unknown, []);
    assert.equal(env['GW_REDIS_URL'], 'redis://redis:6379');
    for (const secret of ['GW_SECRETS_KEY', 'GW_ADMIN_KEY']) assert.match(String(env[secret]), new RegExp(`^\\$\\{${secret}:\\?.+\\}$`), `${secret} must come from the environment, required`);
  });

  it('probes the gateway\'s readiness on /readyz at its port, and stops it slower than it drains', () => {
    const test = list(obj(gateway['healthcheck'], 'gateway.healthcheck')['test'], 'healthcheck.test').map(String).join(' ');
    assert.ok(test.includes(`http://127.0.0.1:${String(env['GW_PORT'])}/readyz`), test);
    const grace = Number(/^(\d+)s$/.exec(String(gateway['stop_grace_period']))?.[1]);
    assert.ok(grace > (SettingsSchema.properties.GW_SHUTDOWN_GRACE_S.default as number), 'stop_grace_period above GW_SHUTDOWN_GRACE_S');
    const publishes = list(gateway['ports'], 'gateway.ports').map(String);
    assert.ok(publishes.some((p) => p.endsWith(`:${String(env['GW_PORT'])}`)), 'the gateway port is published');
  });

  it('mounts only files that exist in deploy/', () => {
    const missing = ['prometheus', 'grafana'].flatMap((s) => binds(s).filter((b) => !existsSync(b.host)).map((b) => `${s}: ${b.host}`));
    assert.deepEqual(missing, []);
  });
});

describe('deploy/prometheus/prometheus.yml', () => {
  const prom = obj(read('prometheus/prometheus.yml'), 'prometheus.yml');
  it('is the file the compose Prometheus reads, and loads the mounted alert rules', () => {
    assert.equal(mountedAt('prometheus', 'prometheus/prometheus.yml'), '/etc/prometheus/prometheus.yml');
    assert.deepEqual(list(prom['rule_files'], 'rule_files'), [mountedAt('prometheus', 'prometheus/alerts.yml')]);
  });

  it('scrapes the gateway service on GW_METRICS_PORT, the fleet-wide metrics of every replica', () => {
    const jobs = list(prom['scrape_configs'], 'scrape_configs').map((j) => obj(j, 'scrape job'));
    const targets = jobs.flatMap((j) => list(j['static_configs'], 'static_configs').flatMap((c) => list(obj(c, 'static_config')['targets'], 'targets')));
    assert.deepEqual(targets, [`gateway:${String(env['GW_METRICS_PORT'])}`]);
  });
});

describe('deploy/grafana provisioning', () => {
  it('provisions the compose Prometheus as the default data source, of the type the dashboard asks for', () => {
    assert.equal(mountedAt('grafana', 'grafana/provisioning'), '/etc/grafana/provisioning');
    const [source] = list(obj(read('grafana/provisioning/datasources/prometheus.yml'), 'datasources file')['datasources'], 'datasources').map((d) => obj(d, 'datasource'));
    const promPort = list(obj(services['prometheus'], 'prometheus')['ports'], 'prometheus.ports').map(String)[0]?.split(':')[1];
    assert.equal(source?.['url'], `http://prometheus:${promPort}`);
    assert.equal(source?.['isDefault'], 'true');
    const dashboard = JSON.parse(readFileSync(join(DEPLOY, 'grafana/dashboard.json'), 'utf8')) as { templating: { list: Array<{ type: string; query: string }> } };
    const wanted = dashboard.templating.list.find((v) => v.type === 'datasource')?.query;
    assert.equal(source?.['type'], wanted);
  });

  it('loads the shipped dashboard from where the compose file mounts it', () => {
    const [provider] = list(obj(read('grafana/provisioning/dashboards/model-gateway.yml'), 'dashboards file')['providers'], 'providers').map((p) => obj(p, 'provider'));
    const mounted = mountedAt('grafana', 'grafana/dashboard.json');
    assert.ok(mounted, 'dashboard.json is mounted');
    assert.equal(obj(provider?.['options'], 'provider.options')['path'], posix.dirname(mounted));
    assert.equal(obj(obj(services['grafana'], 'grafana')['environment'], 'grafana.environment')['GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH'], mounted);
  });
});

describe('docker compose config', () => {
  const probe = spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' });
  const available = probe.status === 0;
  it('accepts the compose file', { skip: available ? false : 'docker compose is not installed here: the checks above stand in for it' }, () => {
    const run = spawnSync('docker', ['compose', '-f', join(DEPLOY, 'docker-compose.yml'), 'config', '--quiet'], {
      encoding: 'utf8',
      env: { ...process.env, GW_SECRETS_KEY: Buffer.alloc(32).toString('base64'), GW_ADMIN_KEY: 'compose-config-check-key' },
    });
    assert.equal(run.status, 0, run.stderr);
  });
});
