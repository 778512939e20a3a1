/**
 * Processes or worker threads for replicas? Runs the same small uWS app
 * (a JSON answer built per request) as 2 worker threads in one process and as
 * 2 processes, each sharing one port through SO_REUSEPORT, and drives both
 * with autocannon. Prints req/s and the replicas' memory. `node --import tsx bench/replica-model.ts`
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

const REPLICAS = 2;
const DURATION_S = Number(process.env['BENCH_DURATION'] ?? 5);

/** one replica: the same plain-JS app in a worker thread (eval) or a process (-e) */
const APP = `
const uws = require(${JSON.stringify(require_resolve('uWebSockets.js'))});
const wt = require('node:worker_threads');
const port = wt.isMainThread ? Number(process.argv[1]) : wt.workerData;
uws.App().any('/*', (res) => {
  res.onAborted(() => undefined);
  const body = JSON.stringify({ id: Math.random().toString(36).slice(2), object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' } }] });
  res.cork(() => res.writeHeader('content-type', 'application/json').end(body));
}).listen('127.0.0.1', port, () => undefined);
`;

/** a host process running REPLICAS worker threads of APP */
const THREADS_HOST = `
const { Worker } = require('node:worker_threads');
for (let i = 0; i < ${REPLICAS}; i++) new Worker(${JSON.stringify(APP)}, { eval: true, workerData: Number(process.argv[1]) });
`;

function require_resolve(name: string): string {
  return new URL(import.meta.resolve(name)).pathname;
}

const rssMiB = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
const node = (code: string, port: number): ChildProcess => spawn(process.execPath, ['-e', code, String(port)], { stdio: 'inherit' });

async function load(port: number): Promise<number> {
  const r = await autocannon({ url: `http://127.0.0.1:${port}/`, connections: 50, duration: DURATION_S });
  return Math.round(r.requests.average);
}

async function measure(children: ChildProcess[], port: number): Promise<{ rps: number; rss: number }> {
  await new Promise((r) => setTimeout(r, 1500));
  const rps = await load(port);
  const rss = children.reduce((sum, c) => sum + rssMiB(c.pid as number), 0);
  for (const c of children) c.kill();
  return { rps, rss };
}

async function main(): Promise<void> {
  const port = 19600 + Math.floor(Math.random() * 300);
  const threads = await measure([node(THREADS_HOST, port)], port);
  const processes = await measure(Array.from({ length: REPLICAS }, () => node(APP, port + 1)), port + 1);
  process.stdout.write(
    `| model | req/s (50 connections, ${DURATION_S} s) | replicas' RSS MiB |\n|---|--:|--:|\n` +
      `| ${REPLICAS} worker threads, one process | ${threads.rps} | ${threads.rss.toFixed(0)} |\n` +
      `| ${REPLICAS} processes | ${processes.rps} | ${processes.rss.toFixed(0)} |\n`,
  );
}

void main();
