import { randomBytes } from 'node:crypto';
import { mkdirSync, openSync, closeSync, writeFileSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { commandOutput, freePort, spawnPinned, waitForPort, type Spawned } from './procs.js';

/** `baseline1`, `baseline2`, …: the builds of other checkouts (BENCH_BASELINE), in the order given */
export type BaselineId = `baseline${number}`;

/** What autocannon and the single-connection client are pointed at. */
export interface Target {
  id: 'direct' | 'gateway' | 'redis' | 'skills-off' | BaselineId | 'nginx';
  title: string;
  port: number;
  /** the process whose CPU is charged to this target (nginx: its master, workers are added) */
  pid: number;
  stop(): Promise<void>;
}

const ROOT = resolve(import.meta.dirname, '..');

/** Waits for the child to listen; a child that never does is stopped, not left behind. */
async function listening(child: Spawned, port: number): Promise<void> {
  try {
    await waitForPort(port);
  } catch (err) {
    await child.stop(1000);
    throw err;
  }
}

/** A fixed, valid developer key (gw_ + 40 base62): the bench's one tenant. */
/** the LoRA adapter the bench's destinations file names; the fake lists it as loaded, so the gateway adopts it at start and no call loads it */
export const BENCH_ADAPTER = 'bench-lora';
export const BENCH_DEV_KEY = `gw_${'BenchKey'.repeat(5)}`;

export async function startUpstream(cpu: string | undefined): Promise<Target> {
  const port = await freePort();
  const child = spawnPinned(cpu, process.execPath, ['--import', 'tsx', join(ROOT, 'bench/fake-upstream.ts'), String(port)], { cwd: ROOT });
  await listening(child, port);
  return { id: 'direct', title: 'direct to the fake upstream', port, pid: child.pid, stop: () => child.stop() };
}

export interface GatewayOptions {
  upstreamPort: number;
  workDir: string;
  /** extra node flags (e.g. --cpu-prof) */
  nodeArgs?: string[];
  /** run src/ through tsx instead of the built dist/ (quicker to iterate, not what production runs) */
  fromSource?: boolean;
  /** the `skills-off` target: the built gateway with an empty skills table (bench/gateway-skills-off.mjs) */
  skillsOff?: boolean;
  /** a baseline target: another checkout's build (`<dir>/dist`), started as `skills-off` is (as shipped with BENCH_BASELINE_AS_SHIPPED=1) */
  baseline?: { id: BaselineId; dir: string };
  /** the `redis` target: the gateway as shipped on a Redis (telemetry rows on its streams), under this key prefix */
  redis?: { url: string; prefix: string };
  /** further gateway settings of this bench (e.g. GW_INGRESS_BUDGET) */
  env?: NodeJS.ProcessEnv;
}

/** Is this target one of the gateway's (they are sent the gateway's paths and bodies)? */
export const isBaseline = (id: Target['id']): id is BaselineId => id.startsWith('baseline');
export const isGateway = (id: Target['id']): boolean => id === 'gateway' || id === 'redis' || id === 'skills-off' || isBaseline(id);

/** The gateway as production runs it: one replica, auth, accounting, metrics, info logs to a file. */
export async function startGatewayProcess(cpu: string | undefined, opts: GatewayOptions): Promise<Target & { logFile: string; child: Spawned }> {
  const dist = join(opts.baseline?.dir ?? ROOT, 'dist');
  const skillsOffScript = join(ROOT, 'bench/gateway-skills-off.mjs');
  const entry = opts.baseline ? (process.env['BENCH_BASELINE_AS_SHIPPED'] === '1' ? [join(dist, 'src/main.js')] : [skillsOffScript, dist]) : opts.skillsOff ? [skillsOffScript] : opts.fromSource ? ['--import', 'tsx', join(ROOT, 'src/main.ts')] : [join(dist, 'src/main.js')];
  if (!opts.fromSource && !existsSync(join(dist, 'src/main.js'))) throw new Error(`${dist}/src/main.js is missing: run \`npm run build\` there first`);
  const port = await freePort();
  const bootstrap = join(opts.workDir, 'bootstrap.json');
  writeFileSync(
    bootstrap,
    JSON.stringify({ orgs: [{ org_id: 'bench', rps_cap: 1e9 }], dev_keys: [{ org_id: 'bench', dev_key_id: 'dk-bench', api_key: BENCH_DEV_KEY }] }),
  );
  // one self-hosted destination on the same fake, holding the bench's LoRA adapter (the fake lists it as loaded)
  const destinations = join(opts.workDir, 'destinations.json');
  writeFileSync(
    destinations,
    JSON.stringify([
      {
        id: 'bench-gpu',
        provider: 'selfhosted',
        origin: `http://127.0.0.1:${opts.upstreamPort}`,
        models: ['bench-base'],
        adapter_memory_mb: 1024,
        adapters: { [BENCH_ADAPTER]: { base_model: 'bench-base', path: '/adapters/bench', size_mb: 64 } },
        price: { input: 0.1, output: 0.2 },
      },
    ]),
  );
  const id = opts.baseline ? opts.baseline.id : opts.skillsOff ? 'skills-off' : opts.redis ? 'redis' : 'gateway';
  const logFile = join(opts.workDir, `${id}.log`);
  const logFd = openSync(logFile, 'a');
  // a clean environment: no GW_ variable of the caller's shell leaks in (a Redis URL would change what is measured)
  const env: NodeJS.ProcessEnv = {
    PATH: process.env['PATH'],
    HOME: process.env['HOME'],
    NODE_ENV: 'production',
    GW_HOST: '127.0.0.1',
    GW_PORT: String(port),
    GW_WORKERS: '1',
    GW_BOOTSTRAP: bootstrap,
    // one fake speaks every vendor's wire format the bench drives
    GW_UPSTREAM_OPENAI: `http://127.0.0.1:${opts.upstreamPort}`,
    GW_UPSTREAM_MSGVENDOR: `http://127.0.0.1:${opts.upstreamPort}`,
    GW_UPSTREAM_CLOUDY: `http://127.0.0.1:${opts.upstreamPort}`,
    GW_DESTINATIONS_FILE: destinations,
    GW_LOG_LEVEL: 'info',
    GW_DEFAULT_RPS_CAP: '1000000000',
    // attribution runs: extra gateway settings, e.g. BENCH_GATEWAY_ENV='GW_GUARDRAILS_MODEL_MODE=off'
    ...extraGatewayEnv(process.env['BENCH_GATEWAY_ENV']),
    ...(opts.redis && { GW_REDIS_URL: opts.redis.url, GW_REDIS_PREFIX: opts.redis.prefix, GW_SECRETS_KEY: randomBytes(32).toString('base64') }),
    ...opts.env,
  };
  const child = spawnPinned(cpu, process.execPath, [...(opts.nodeArgs ?? []), ...entry], { env, stdout: logFd, cwd: opts.workDir });
  closeSync(logFd);
  await listening(child, port);
  const title = opts.baseline
    ? `through ${opts.baseline.dir}'s gateway, empty skills table`
    : opts.skillsOff
      ? 'through the gateway, empty skills table'
      : opts.redis
        ? 'through the gateway on Redis (telemetry rows on Redis Streams)'
        : 'through the gateway';
  return { id, title, port, pid: child.pid, logFile, child, stop: () => child.stop() };
}

function nginxConf(dir: string, port: number, upstreamPort: number): string {
  return `daemon off;
master_process on;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log ${dir}/access.log combined buffer=64k flush=1s;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  client_max_body_size 64m;
  client_body_buffer_size 64k;
  keepalive_requests 1000000;
  upstream fake {
    server 127.0.0.1:${upstreamPort};
    keepalive 64;
    keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:${port};
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_buffering off;
    location / {
      proxy_pass http://fake;
    }
    # the gateway's vendor prefixes, stripped as the gateway strips them
    location /msgvendor/ {
      proxy_pass http://fake/;
    }
    location /cloudy/ {
      proxy_pass http://fake/;
    }
  }
}
`;
}

export function nginxVersion(): string {
  return commandOutput('nginx', ['-v']).replace(/^nginx version: /, '');
}

/** nginx as the reference reverse proxy: one worker, an upstream keep-alive pool, unbuffered like a streaming relay, the gateway's paths. */
export async function startNginx(cpu: string | undefined, upstreamPort: number, workDir: string): Promise<Target> {
  const dir = join(workDir, 'nginx');
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, nginxConf(dir, port, upstreamPort));
  const child = spawnPinned(cpu, 'nginx', ['-p', dir, '-c', conf, '-e', join(dir, 'error.log')]);
  await listening(child, port);
  return { id: 'nginx', title: 'through nginx', port, pid: child.pid, stop: () => child.stop() };
}

/** `A=1 B=2` into an environment object; an entry without `=` is a typo worth stopping for. */
function extraGatewayEnv(spec: string | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const pair of (spec ?? '').split(/\s+/).filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`BENCH_GATEWAY_ENV: "${pair}" is not NAME=value`);
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return env;
}
