/**
 * What loading a LoRA adapter adds to a call to a self-hosted destination:
 * sequential chat calls through the gateway (in this process, from src/) to
 * the fake vLLM server of test/fakes (its dynamic LoRA API answers at once,
 * so the figures are the gateway's own cost of a load; a real server's time
 * to read the adapter adds to them one for one, and gw_adapter_load_seconds
 * shows it in production). Three kinds of call, medians and p99 of the whole
 * call as the client sees it:
 * - to an adapter already loaded;
 * - the first call to an adapter (one load before the call);
 * - the first call to an adapter when the adapter memory is full (one unload,
 *   one load, then the call).
 *
 *   node --import tsx bench/adapter-load.ts [--adapters 300] [--rounds 3]
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { startGateway } from '../src/main.js';
import { loadSettings } from '../src/settings.js';
import { startFakeVllm } from '../test/fakes/vllm.js';

const { values } = parseArgs({ options: { adapters: { type: 'string', default: '300' }, rounds: { type: 'string', default: '3' } } });
const ADAPTERS = Number(values.adapters);
const ROUNDS = Number(values.rounds);
const BASE = 'bench-base';
const DEV_KEY = `gw_${'adapterLoadBench'.padEnd(40, '0')}`;

/** adapters loaded before the measured calls, so the load path is warm too */
const WARM = 50;
const names = Array.from({ length: ADAPTERS }, (_, i) => `lora-${i}`);
const warmNames = Array.from({ length: WARM }, (_, i) => `warm-${i}`);
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] as number;

async function gatewayOver(memoryMb: number | undefined) {
  const fake = await startFakeVllm({ models: [BASE] });
  const dir = await mkdtemp(join(tmpdir(), 'gw-adapter-bench-'));
  const adapters = Object.fromEntries([...names, ...warmNames].map((n) => [n, { base_model: BASE, path: `/adapters/${n}`, size_mb: 1 }]));
  await writeFile(join(dir, 'destinations.json'), JSON.stringify([{ id: 'gpu', provider: 'selfhosted', origin: fake.origin, models: [BASE], adapters, ...(memoryMb !== undefined && { adapter_memory_mb: memoryMb }) }]));
  await writeFile(join(dir, 'bootstrap.json'), JSON.stringify({ orgs: [{ org_id: 'bench', rps_cap: 1_000_000 }], dev_keys: [{ org_id: 'bench', dev_key_id: 'dk-bench', api_key: DEV_KEY }] }));
  const gateway = await startGateway(
    loadSettings({ GW_HOST: '127.0.0.1', GW_PORT: '0', GW_LOG_LEVEL: 'warn', GW_DESTINATIONS_FILE: join(dir, 'destinations.json'), GW_BOOTSTRAP: join(dir, 'bootstrap.json') }),
    { logDestination: new Writable({ write: (_c, _e, cb) => cb() }) },
  );
  const url = `http://127.0.0.1:${gateway.port}`;
  return {
    fake,
    async call(model: string): Promise<number> {
      const t = performance.now();
      const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${DEV_KEY}` }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }) });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${model}: ${res.status}`);
      return performance.now() - t;
    },
    /** the gateway's own measure of the load calls: mean seconds and count */
    async loadSeconds(): Promise<{ mean: number; count: number }> {
      const text = await (await fetch(`${url}/metrics`)).text();
      const sum = Number(/gw_adapter_load_seconds_sum\{[^}]*\} ([\d.e-]+)/.exec(text)?.[1]);
      const count = Number(/gw_adapter_load_seconds_count\{[^}]*\} (\d+)/.exec(text)?.[1]);
      return { mean: sum / count, count };
    },
    async close() {
      await gateway.close();
      await fake.close();
    },
  };
}

const rows: string[] = [];
const report = (what: string, ms: number[]) => rows.push(`| ${what} | ${ms.length} | ${pct(ms, 0.5).toFixed(2)} | ${pct(ms, 0.99).toFixed(2)} |`);
/** an adapter called before every measured call, so it is never the least recently used and stays loaded */
const HOT = 'warm-0';

// no adapter memory limit: each adapter's first call loads it; the hot adapter's calls beside them are the loaded ones
const roomy = await gatewayOver(undefined);
for (let i = 0; i < WARM; i++) await roomy.call(BASE);
for (const n of warmNames) await roomy.call(n);
const loadedCalls: number[] = [];
const firstCalls: number[] = [];
for (const n of names) {
  loadedCalls.push(await roomy.call(HOT));
  firstCalls.push(await roomy.call(n));
}
const roomyLoads = await roomy.loadSeconds();
await roomy.close();

// room for the hot adapter and one other: every call to another unloads the one before it and loads its own
const tight = await gatewayOver(2);
for (let i = 0; i < WARM; i++) await tight.call(BASE);
for (const n of warmNames) await tight.call(n);
const evictingCalls: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  for (const n of names) {
    loadedCalls.push(await tight.call(HOT));
    evictingCalls.push(await tight.call(n));
  }
}
const tightLoads = await tight.loadSeconds();
await tight.close();

report('adapter loaded', loadedCalls);
report('first call: one load', firstCalls);
report('first call, adapter memory full: one unload and one load', evictingCalls);
process.stdout.write(['| call | calls | p50 ms | p99 ms |', '|---|--:|--:|--:|', ...rows].join('\n') + '\n');
process.stdout.write(
  `gw_adapter_load_seconds mean (warm-up loads included): ${(roomyLoads.mean * 1000).toFixed(2)} ms over ${roomyLoads.count} loads; ${(tightLoads.mean * 1000).toFixed(2)} ms over ${tightLoads.count} loads beside evictions\n`,
);
