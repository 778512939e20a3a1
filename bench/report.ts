import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { Scenario } from './scenarios.js';
import type { Target } from './targets.js';

export interface Row {
  scenario: Scenario;
  target: Target['id'];
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  cpuMicrosPerReq: number;
  singleMs: number;
  requests: number;
}

export interface Failure {
  scenario: Scenario['id'];
  target: Target['id'];
  reason: string;
}

/** What a scenario/target cell is compared against. */
const find = (rows: Row[], scenario: Scenario['id'], target: Target['id']) => rows.find((r) => r.scenario.id === scenario && r.target === target);

const f = (x: number, digits: number) => x.toFixed(digits);
const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || b === 0 ? '–' : `${f(a / b, 2)}×`);

export function resultsTable(rows: Row[]): string {
  const head = [
    '| scenario | target | req/s | p50 ms | p99 ms | CPU µs/req | 1-conn p50 ms | added 1-conn ms | req/s ÷ direct | CPU ÷ direct | CPU ÷ nginx |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
  ];
  const lines = rows.map((r) => {
    const direct = find(rows, r.scenario.id, 'direct');
    const nginx = find(rows, r.scenario.id, 'nginx');
    const isDirect = r.target === 'direct';
    return `| ${r.scenario.title} | ${r.target} | ${f(r.reqPerSec, 0)} | ${f(r.p50Ms, 2)} | ${f(r.p99Ms, 2)} | ${f(r.cpuMicrosPerReq, 1)} | ${f(r.singleMs, 3)} | ${
      isDirect || !direct ? '–' : `+${f(r.singleMs - direct.singleMs, 3)}`
    } | ${isDirect ? '–' : ratio(r.reqPerSec, direct?.reqPerSec)} | ${isDirect ? '–' : ratio(r.cpuMicrosPerReq, direct?.cpuMicrosPerReq)} | ${
      r.target === 'gateway' ? ratio(r.cpuMicrosPerReq, nginx?.cpuMicrosPerReq) : '–'
    } |`;
  });
  return [...head, ...lines].join('\n');
}

/** The issue's performance budget, checked against this run. */
export function budgetLines(rows: Row[]): string[] {
  const out: string[] = [];
  const mark = (ok: boolean) => (ok ? 'met' : '**missed**');
  const gwJson = find(rows, 'json', 'gateway');
  const directJson = find(rows, 'json', 'direct');
  const nginxJson = find(rows, 'json', 'nginx');
  if (gwJson) out.push(`- Gateway CPU per small-JSON request: ${f(gwJson.cpuMicrosPerReq, 1)} µs (budget ≤ 80, goal ≤ 35): ${mark(gwJson.cpuMicrosPerReq <= 80)}`);
  if (gwJson && directJson) {
    const added = gwJson.singleMs - directJson.singleMs;
    out.push(`- Gateway added single-connection p50, small JSON: ${f(added, 3)} ms (budget ≤ 0.2, goal ≤ 0.05): ${mark(added <= 0.2)}`);
  }
  for (const id of ['stream', 'body32k'] as const) {
    const gw = find(rows, id, 'gateway');
    const nginx = find(rows, id, 'nginx');
    if (gw && nginx) out.push(`- Gateway CPU ÷ nginx CPU, ${gw.scenario.title}: ${f(gw.cpuMicrosPerReq / nginx.cpuMicrosPerReq, 2)}× (budget ≤ 4×): ${mark(gw.cpuMicrosPerReq <= 4 * nginx.cpuMicrosPerReq)}`);
  }
  if (nginxJson && directJson) {
    out.push(`- Reference, nginx on small JSON: ${f(nginxJson.cpuMicrosPerReq, 1)} µs CPU per request, +${f(nginxJson.singleMs - directJson.singleMs, 3)} ms single-connection (the issue quotes 17 µs, +0.04 ms)`);
  }
  return out;
}

/**
 * Replaces the text between `<!-- name:begin -->` and `<!-- name:end -->` in a
 * markdown file, so the bench and the profiler each rewrite only their part.
 */
export function writeSection(file: string, name: string, content: string, skeleton: string): void {
  const begin = `<!-- ${name}:begin -->`;
  const end = `<!-- ${name}:end -->`;
  let doc = existsSync(file) ? readFileSync(file, 'utf8') : skeleton;
  if (!doc.includes(begin)) doc = `${doc.trimEnd()}\n\n${begin}\n${end}\n`;
  const from = doc.indexOf(begin) + begin.length;
  const to = doc.indexOf(end);
  writeFileSync(file, `${doc.slice(0, from)}\n${content.trim()}\n${doc.slice(to)}`);
}
