/**
 * What one relayed request costs Redis, by feature: commands, bytes and
 * Redis CPU, for docs/operations.md, Scaling model.
 *
 *   node --import tsx bench/redis-cost.ts [requests per scenario, default 4000]
 *
 * Runs a redis-server of its own on a free loopback port (its counters must
 * count the gateway's commands alone: never the shared Redis), the bench's
 * fake upstream, and one gateway replica in this process from src/. Each
 * scenario sends its requests twice, 16 at a time: once with MONITOR
 * attached, to attribute every command to a feature by the key it names,
 * and once without, for INFO's totals (commands, network bytes, Redis CPU),
 * which MONITOR's own traffic would inflate. An idle stretch measures what
 * a replica sends with no traffic at all.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { startGateway } from '../src/main.js';
import { loadSettings } from '../src/settings.js';
import { startFakeUpstream } from './fake-upstream.js';
import { freePort, waitForPort } from './procs.js';

const REQUESTS = Number(process.argv[2] ?? 4000);
const CONNECTIONS = 16;
const IDLE_S = 10;
const ADMIN_KEY = 'admin-key-for-redis-cost-0123456789';
const DEV_KEY = `gw_${'RedisCost'.repeat(5).slice(0, 40)}`;
/** an org whose cap makes small leases (50 ms of 400/s: 20 tokens), sent half its cap */
const SMALL_KEY = `gw_${'SmallCost'.repeat(5).slice(0, 40)}`;
const SMALL_CAP = 400;
const SMALL_RATE = 200;
const BODY = JSON.stringify({ model: 'gpt-4o', max_tokens: 16, messages: [{ role: 'user', content: 'Say hello in one word.' }] });

/** A feature by the first key a command names (its prefix after GW_REDIS_PREFIX). */
const FEATURES: Array<[string, RegExp]> = [
  ['rate limit (leased tokens)', /^meter:rate:/],
  ['spend cap (reserve, settle, renew)', /^meter:\{/],
  ['telemetry (batched appends)', /^tel:\{/],
  ['configuration (generation check)', /^\{doc\}/],
  ['lifecycle (sweep lease)', /^lc:/],
];

interface Totals {
  commands: number;
  inBytes: number;
  outBytes: number;
  cpuUs: number;
}

async function totals(redis: Redis): Promise<Totals> {
  const info = await redis.info();
  const num = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  // INFO itself is a command and its reply bytes: the caller takes it out of deltas
  return { commands: num('total_commands_processed'), inBytes: num('total_net_input_bytes'), outBytes: num('total_net_output_bytes'), cpuUs: (num('used_cpu_user') + num('used_cpu_sys')) * 1e6 };
}

const delta = (a: Totals, b: Totals): Totals => ({ commands: b.commands - a.commands - 1, inBytes: b.inBytes - a.inBytes, outBytes: b.outBytes - a.outBytes, cpuUs: b.cpuUs - a.cpuUs });

/** RESP size of a command as sent: the array header and each argument's length line, bytes and CRLF. */
const respBytes = (args: string[]): number => `*${args.length}\r\n`.length + args.reduce((n, a) => n + `$${Buffer.byteLength(a)}\r\n`.length + Buffer.byteLength(a) + 2, 0);

interface FeatureCost {
  /** commands the gateway sent: its round trips' worth */
  commands: number;
  /** what the feature's scripts ran inside Redis */
  inScripts: number;
  /** RESP bytes of the commands sent */
  bytes: number;
}

/** Commands and request bytes by feature while `run` runs, read from MONITOR. */
async function attribute(port: number, prefix: string, run: () => Promise<void>): Promise<Map<string, FeatureCost>> {
  const monitor = new Redis({ port, host: '127.0.0.1' });
  const byFeature = new Map<string, FeatureCost>();
  const entry = (feature: string) => {
    let e = byFeature.get(feature);
    if (!e) byFeature.set(feature, (e = { commands: 0, inScripts: 0, bytes: 0 }));
    return e;
  };
  const featureOf = (key: string, name: string) => (key.startsWith(prefix) ? (FEATURES.find(([, re]) => re.test(key.slice(prefix.length)))?.[0] ?? `other (${name})`) : `other (${name})`);
  // a script's own operations come from the source `lua`; one without a key (TIME, first in every script) counts with the next that has one
  let keyless = 0;
  const m = await monitor.monitor();
  m.on('monitor', (_time: string, args: string[], source: string) => {
    const name = String(args[0]).toLowerCase();
    if (source === 'lua') {
      if (args.length < 2) keyless++;
      else {
        entry(featureOf(String(args[1]), name)).inScripts += 1 + keyless;
        keyless = 0;
      }
      return;
    }
    const e = entry(featureOf(String((name === 'evalsha' || name === 'eval' ? args[3] : args[1]) ?? ''), name));
    e.commands += 1;
    e.bytes += respBytes(args.map(String));
  });
  await run();
  await new Promise((r) => setTimeout(r, 500));
  m.disconnect();
  monitor.disconnect();
  return byFeature;
}

/** REQUESTS relayed calls with `key`, as fast as they go or at `rate` per second; the rate reached */
async function load(url: string, key: string, rate?: number): Promise<number> {
  const result = await autocannon({
    url: `${url}/v1/chat/completions`,
    method: 'POST',
    connections: CONNECTIONS,
    amount: REQUESTS,
    ...(rate !== undefined && { overallRate: rate }),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-gw-provider-key': 'sk-upstream' },
    body: BODY,
  });
  if (result['2xx'] !== REQUESTS) throw new Error(`${result['2xx']} of ${REQUESTS} answered 2xx (non-2xx ${result.non2xx}, errors ${result.errors})`);
  return result.requests.average;
}

async function main(): Promise<void> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'gw-redis-cost-'));
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  const upstream = await startFakeUpstream();
  let gateway: Awaited<ReturnType<typeof startGateway>> | undefined;
  const admin = new Redis({ port, host: '127.0.0.1', lazyConnect: true });
  try {
    await waitForPort(port);
    await admin.connect();
    const prefix = `cost:${randomBytes(3).toString('hex')}:`;
    const bootstrap = join(dir, 'bootstrap.json');
    writeFileSync(
      bootstrap,
      JSON.stringify({
        orgs: [
          { org_id: 'cost', rps_cap: 100_000 },
          { org_id: 'small', rps_cap: SMALL_CAP },
        ],
        dev_keys: [
          { org_id: 'cost', dev_key_id: 'dk-cost', api_key: DEV_KEY },
          { org_id: 'small', dev_key_id: 'dk-small', api_key: SMALL_KEY },
        ],
      }),
    );
    const settings = loadSettings({
      GW_HOST: '127.0.0.1',
      GW_PORT: '0',
      GW_WORKERS: '1',
      GW_LOG_LEVEL: 'warn',
      GW_ADMIN_KEY: ADMIN_KEY,
      GW_SECRETS_KEY: randomBytes(32).toString('base64'),
      GW_REDIS_URL: `redis://127.0.0.1:${port}`,
      GW_REDIS_PREFIX: prefix,
      GW_BOOTSTRAP: bootstrap,
      GW_UPSTREAM_OPENAI: `http://127.0.0.1:${upstream.port}`,
    });
    gateway = await startGateway(settings, { logDestination: { write: () => undefined } });
    const url = `http://127.0.0.1:${gateway.port}`;
    await load(url, DEV_KEY); // warm-up: connections, JIT, the first lease

    const idleBefore = await totals(admin);
    await new Promise((r) => setTimeout(r, IDLE_S * 1000));
    const idle = delta(idleBefore, await totals(admin));
    process.stdout.write(`idle replica: ${(idle.commands / IDLE_S).toFixed(1)} commands/s, ${(idle.inBytes / IDLE_S).toFixed(0)} B/s in, ${(idle.outBytes / IDLE_S).toFixed(0)} B/s out\n\n`);

    const setCap = async () => {
      const res = await fetch(`${url}/api/v1/spend_cap/update`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${DEV_KEY}` }, body: JSON.stringify({ cap_usd: 1_000_000 }) });
      if (res.status !== 200) throw new Error(`spend_cap/update answered ${res.status}`);
    };
    const scenarios: Array<{ name: string; key: string; rate?: number; prepare?: () => Promise<void> }> = [
      { name: 'relay, an org with rps_cap 100000 (leases of 100 tokens), no spend cap', key: DEV_KEY },
      { name: `relay, an org with rps_cap ${SMALL_CAP} at ${SMALL_RATE} req/s (leases of 20 tokens), no spend cap`, key: SMALL_KEY, rate: SMALL_RATE },
      { name: 'relay, the rps_cap 100000 org with a spend cap', key: DEV_KEY, prepare: setCap },
    ];
    for (const { name, key, rate, prepare } of scenarios) {
      await prepare?.();
      const byFeature = await attribute(port, prefix, async () => void (await load(url, key, rate)));
      const before = await totals(admin);
      const started = performance.now();
      const rps = await load(url, key, rate);
      const seconds = (performance.now() - started) / 1000;
      await new Promise((r) => setTimeout(r, 500)); // the last telemetry batch and settlements
      const t = delta(before, await totals(admin));
      const idleShare = (idle.commands / IDLE_S) * (seconds + 0.5);
      process.stdout.write(`${name}: ${REQUESTS} requests at ${rps.toFixed(0)} req/s\n`);
      process.stdout.write('| feature | commands sent / request | operations in its scripts / request | bytes sent / request |\n|---|--:|--:|--:|\n');
      for (const [feature, v] of [...byFeature].sort()) process.stdout.write(`| ${feature} | ${(v.commands / REQUESTS).toFixed(4)} | ${(v.inScripts / REQUESTS).toFixed(2)} | ${(v.bytes / REQUESTS).toFixed(1)} |\n`);
      process.stdout.write(
        `INFO per request: ${((t.commands - idleShare) / REQUESTS).toFixed(3)} commands (script operations included), ${(t.inBytes / REQUESTS).toFixed(0)} B to Redis, ` +
          `${(t.outBytes / REQUESTS).toFixed(0)} B from Redis, ${(t.cpuUs / REQUESTS).toFixed(1)} µs Redis CPU\n\n`,
      );
    }
  } finally {
    await gateway?.close();
    upstream.close();
    admin.disconnect();
    server.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
process.exit(0);
