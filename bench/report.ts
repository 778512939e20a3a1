import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { Scenario } from './scenarios.js';
import { isGateway, type Target } from './targets.js';

export interface Row {
  scenario: Scenario;
  target: Target['id'];
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  cpuMicrosPerReq: number;
  /** single-connection medians: whole reply, first byte, first byte to end */
  singleMs: number;
  firstByteMs: number;
  afterFirstByteMs: number;
  requests: number;
  /** the gateway's skill pool over the measured load (bench/pool-metrics.ts) */
  pool?: string;
  /** with BENCH_PASSES above 1: each pass's CPU µs per request, in pass order */
  passCpu?: number[];
  /** a baseline's: skills-off's CPU per request ÷ this one's, per round of the two loaded at once (bench/run.ts pairedRounds) */
  pairedRatios?: number[];
}

export interface Failure {
  scenario: Scenario['id'];
  target: Target['id'];
  reason: string;
}

/** What a scenario/target cell is compared against. */
const find = (rows: Row[], scenario: Scenario['id'], target: Target['id']) => rows.find((r) => r.scenario.id === scenario && r.target === target);

const f = (x: number, digits: number) => x.toFixed(digits);
/** a difference with its sign: `+0.120`, `-0.119` (a bare `+` before a negative one printed `+-0.119`) */
const signed = (x: number, digits: number) => (x < 0 ? '' : '+') + f(x, digits);
const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || b === 0 ? '–' : `${f(a / b, 2)}×`);

const added = (r: Row, base: Row | undefined, pick: (r: Row) => number, digits = 3) => (r.target === 'direct' || !base ? '–' : signed(pick(r) - pick(base), digits));

export function resultsTable(rows: Row[]): string {
  const head = [
    '| scenario | target | req/s | p50 ms | p99 ms | CPU µs/req | 1-conn p50 ms | added 1-conn ms | TTFB ms | added TTFB ms | req/s ÷ direct | CPU ÷ direct | CPU ÷ nginx |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
  ];
  const lines = rows.map((r) => {
    const direct = find(rows, r.scenario.id, 'direct');
    const nginx = find(rows, r.scenario.id, 'nginx');
    const isDirect = r.target === 'direct';
    return `| ${r.scenario.title} | ${r.target} | ${f(r.reqPerSec, 0)} | ${f(r.p50Ms, 2)} | ${f(r.p99Ms, 2)} | ${f(r.cpuMicrosPerReq, 1)} | ${f(r.singleMs, 3)} | ${added(r, direct, (x) => x.singleMs)} | ${f(r.firstByteMs, 3)} | ${added(r, direct, (x) => x.firstByteMs)} | ${
      isDirect ? '–' : ratio(r.reqPerSec, direct?.reqPerSec)
    } | ${isDirect ? '–' : ratio(r.cpuMicrosPerReq, direct?.cpuMicrosPerReq)} | ${isGateway(r.target) ? ratio(r.cpuMicrosPerReq, nginx?.cpuMicrosPerReq) : '–'} |`;
  });
  return [...head, ...lines].join('\n');
}

/** Time the target adds per event (single connection, µs): over the whole reply, and over the events after the first. */
const addedPerEvent = (r: Row, direct: Row, events: number) => ((r.singleMs - direct.singleMs) * 1000) / events;
const addedPerLaterEvent = (r: Row, direct: Row, events: number) => ((r.afterFirstByteMs - direct.afterFirstByteMs) * 1000) / (events - 1);

/** One row per stream scenario and proxy: what relaying adds to the first byte and to each event. */
export function streamTable(rows: Row[]): string {
  const head = [
    '| stream | family | target | events | added TTFB ms | added 1-conn ms | added µs/event | added µs/later event | CPU µs/event | CPU ÷ nginx |',
    '|---|---|---|--:|--:|--:|--:|--:|--:|--:|',
  ];
  const lines = rows.flatMap((r) => {
    const stream = r.scenario.stream;
    const direct = find(rows, r.scenario.id, 'direct');
    if (!stream || !direct || r.target === 'direct') return [];
    const nginx = find(rows, r.scenario.id, 'nginx');
    const cells = [
      r.scenario.title,
      stream.family,
      r.target,
      String(stream.events),
      added(r, direct, (x) => x.firstByteMs),
      added(r, direct, (x) => x.singleMs),
      f(addedPerEvent(r, direct, stream.events), 1),
      f(addedPerLaterEvent(r, direct, stream.events), 1),
      f(r.cpuMicrosPerReq / stream.events, 1),
      isGateway(r.target) ? ratio(r.cpuMicrosPerReq, nginx?.cpuMicrosPerReq) : '–',
    ];
    return [`| ${cells.join(' | ')} |`];
  });
  return [...head, ...lines].join('\n');
}

/**
 * The foundation's committed chat-completions figures for the gateway (run of
 * 2026-11-21 06:25 UTC, commit 2b34bda), which later work must not regress.
 */
const FOUNDATION = {
  json: { cpuMicrosPerReq: 269.1, addedSingleMs: 0.272 },
  stream: { cpuMicrosPerReq: 469.7, addedSingleMs: 0.485 },
} as const;
/** how much worse than the foundation a figure may read before it counts as a regression (run-to-run noise) */
const NOISE = 1.1;

/** chat-completions against the foundation: CPU per request and added single-connection p50 */
function regressionLines(rows: Row[]): string[] {
  const mark = (ok: boolean) => (ok ? 'not regressed' : '**regressed**');
  return (['json', 'stream'] as const).flatMap((id) => {
    const gw = find(rows, id, 'gateway');
    const direct = find(rows, id, 'direct');
    if (!gw || !direct) return [];
    const base = FOUNDATION[id];
    const addedMs = gw.singleMs - direct.singleMs;
    const ok = gw.cpuMicrosPerReq <= base.cpuMicrosPerReq * NOISE && addedMs <= base.addedSingleMs * NOISE;
    return [
      `- chat-completions ${gw.scenario.title} against the foundation (${base.cpuMicrosPerReq} µs CPU/req, +${base.addedSingleMs} ms 1-conn): ${f(gw.cpuMicrosPerReq, 1)} µs, ${signed(addedMs, 3)} ms: ${mark(ok)}`,
    ];
  });
}

/** Per stream scenario: what the gateway and nginx add to the first byte and to each event. */
function streamLines(rows: Row[]): string[] {
  return rows.flatMap((gw) => {
    const stream = gw.scenario.stream;
    const direct = find(rows, gw.scenario.id, 'direct');
    if (gw.target !== 'gateway' || !stream || !direct) return [];
    const nginx = find(rows, gw.scenario.id, 'nginx');
    const figures = (r: Row) =>
      `${signed(r.firstByteMs - direct.firstByteMs, 3)} ms to first byte, ${signed(addedPerEvent(r, direct, stream.events), 1)} µs per event (${signed(addedPerLaterEvent(r, direct, stream.events), 1)} after the first), ${f(r.cpuMicrosPerReq / stream.events, 1)} µs CPU per event`;
    return [`- ${gw.scenario.title} (${stream.family}), gateway: ${figures(gw)}${nginx ? `; nginx: ${figures(nginx)}` : ''}`];
  });
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
  const gwExecute = find(rows, 'execute', 'gateway');
  if (gwExecute && gwJson) {
    const r = gwExecute.cpuMicrosPerReq / gwJson.cpuMicrosPerReq;
    out.push(`- /v1/execute to an openai model ÷ the chat-completions relay, CPU per request: ${f(r, 2)}× (budget ≤ 1.3×): ${mark(r <= 1.3)}`);
  }
  if (nginxJson && directJson) {
    out.push(`- Reference, nginx on small JSON: ${f(nginxJson.cpuMicrosPerReq, 1)} µs CPU per request, ${signed(nginxJson.singleMs - directJson.singleMs, 3)} ms single-connection (the issue quotes 17 µs, +0.04 ms)`);
  }
  out.push(...skillBudgetLines(rows));
  const pools = rows.flatMap((r) => (r.pool ? [`- Skill pool under ${r.scenario.title} load (gateway): ${r.pool}`] : []));
  return [...out, ...regressionLines(rows), ...skillsOffLines(rows), ...telemetryLines(rows), ...pools, ...streamLines(rows)];
}

/** The per-key skills' budget: a cache hit, all five in shadow, PII redaction on a large body. */
function skillBudgetLines(rows: Row[]): string[] {
  const out: string[] = [];
  const mark = (ok: boolean) => (ok ? 'met' : '**missed**');
  const gw = (id: Scenario['id']) => find(rows, id, 'gateway');
  const added = (id: Scenario['id']) => {
    const r = gw(id);
    const direct = find(rows, id, 'direct');
    return r && direct ? r.singleMs - direct.singleMs : undefined;
  };
  const hit = gw('cache-hit');
  const relay = gw('json');
  const hitAdded = added('cache-hit');
  const relayAdded = added('json');
  if (hit && relay && hitAdded !== undefined && relayAdded !== undefined) {
    const ok = hit.cpuMicrosPerReq <= relay.cpuMicrosPerReq && hitAdded < relayAdded;
    out.push(`- Cache hit: ${f(hit.cpuMicrosPerReq, 1)} µs CPU/req, ${signed(hitAdded, 3)} ms 1-conn, against the relayed call's ${f(relay.cpuMicrosPerReq, 1)} µs, ${signed(relayAdded, 3)} ms (budget: no more CPU, less added time): ${mark(ok)}`);
  }
  const shadow = gw('shadow-2k');
  const plain = gw('chat2k');
  if (shadow && plain) {
    const extra = shadow.singleMs - plain.singleMs;
    out.push(`- All five skills in shadow on a 2 KB chat body: ${signed(extra, 3)} ms 1-conn and ${signed(shadow.cpuMicrosPerReq - plain.cpuMicrosPerReq, 1)} µs CPU/req over skills off (budget ≤ 0.5 ms): ${mark(extra <= 0.5)}`);
  }
  const pii = gw('pii-32k');
  if (pii) out.push(`- PII redaction acting on a 32 KB body: p99 ${f(pii.p99Ms, 0)} ms under load, ${signed(added('pii-32k') ?? NaN, 3)} ms 1-conn, ${f(pii.cpuMicrosPerReq, 1)} µs CPU/req (ceiling 250 ms): ${mark(pii.p99Ms < 250)}`);
  return out;
}

/** The request skeleton with no skill stage (empty skills table) beside the gateway as shipped, whose guardrails always run. */
function skillsOffLines(rows: Row[]): string[] {
  return rows.flatMap((off) => {
    if (off.target !== 'skills-off') return [];
    const direct = find(rows, off.scenario.id, 'direct');
    const gw = find(rows, off.scenario.id, 'gateway');
    if (!direct || !gw) return [];
    const added = (r: Row) => r.singleMs - direct.singleMs;
    return [
      `- ${off.scenario.title}, skills off (empty skills table): ${f(off.cpuMicrosPerReq, 1)} µs CPU/req, ${signed(added(off), 3)} ms 1-conn; ` +
        `the guardrail stage on top (the gateway as shipped): ${signed(gw.cpuMicrosPerReq - off.cpuMicrosPerReq, 1)} µs CPU/req, ${signed(added(gw) - added(off), 3)} ms 1-conn`,
    ];
  });
}

/**
 * What telemetry on Redis adds to a relayed request (budget ≤ 10 % of its
 * CPU): the gateway on a Redis (the `redis` target) against the same gateway
 * without one. The gateway on a Redis also keeps its configuration there and
 * leases its rate-limit tokens from it, so the figure is an upper bound on
 * telemetry's own share.
 */
function telemetryLines(rows: Row[]): string[] {
  const on = find(rows, 'json', 'redis');
  const off = find(rows, 'json', 'gateway');
  if (!on || !off) return [];
  const share = on.cpuMicrosPerReq / off.cpuMicrosPerReq - 1;
  const ratio = perPassRatio(on, off);
  const percent = (x: number) => `${x >= 0 ? '+' : ''}${f(x * 100, 1)} %`;
  const single = on.singleMs - off.singleMs;
  return [
    `- Telemetry on Redis over off, small JSON (the gateway on a Redis against the gateway without one): ${f(on.cpuMicrosPerReq, 1)} µs CPU/req against ${f(off.cpuMicrosPerReq, 1)} ` +
      `(${percent(share)}${ratio === undefined ? '' : `; per pass, median ${percent(ratio - 1)}`}; budget ≤ +10 %): ${(ratio ?? share + 1) - 1 <= 0.1 ? 'met' : '**missed**'}; ` +
      `1-conn p50 ${single >= 0 ? '+' : ''}${f(single, 3)} ms`,
  ];
}

/** the middle value, or the mean of the two middle ones */
export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

/**
 * The median over passes of one target's CPU per request divided by
 * another's in the same pass (skills-off's by a baseline's, the Redis
 * gateway's by the gateway's; the two ran next to each other): one pass
 * slowed by other work on the box moves it less than the totals.
 */
function perPassRatio(row: Row, base: Row): number | undefined {
  const a = row.passCpu;
  const b = base.passCpu;
  if (!a || !b || a.length !== b.length) return undefined;
  const ratios = a.flatMap((x, i) => (x > 0 && (b[i] as number) > 0 ? [x / (b[i] as number)] : []));
  return ratios.length > 1 ? median(ratios) : undefined;
}

/** skills-off against each baseline target (BENCH_BASELINE's checkouts, in order), each figure's change in percent. */
export function baselineLines(rows: Row[], baselines: string[]): string[] {
  const change = (now: number, then: number) => `${now >= then ? '+' : ''}${f((now / then - 1) * 100, 1)} %`;
  return rows.flatMap((off) => {
    if (off.target !== 'skills-off') return [];
    const direct = find(rows, off.scenario.id, 'direct');
    return baselines.flatMap((dir, i) => {
      const base = find(rows, off.scenario.id, `baseline${i + 1}`);
      if (!base) return [];
      const ratio = perPassRatio(off, base);
      const paired = base.pairedRatios;
      const cpu =
        `${f(off.cpuMicrosPerReq, 1)} µs CPU/req against ${f(base.cpuMicrosPerReq, 1)} (${change(off.cpuMicrosPerReq, base.cpuMicrosPerReq)}` +
        `${ratio === undefined ? '' : `; per pass, median ${change(ratio, 1)}`}` +
        `${paired === undefined || paired.length === 0 ? '' : `; both loaded at once, median of ${paired.length} rounds ${change(median(paired), 1)}, rounds ${change(Math.min(...paired), 1)} to ${change(Math.max(...paired), 1)}`})`;
      const single = direct
        ? `, ${signed(off.singleMs - direct.singleMs, 3)} ms 1-conn against ${signed(base.singleMs - direct.singleMs, 3)} (${change(off.singleMs - direct.singleMs, base.singleMs - direct.singleMs)})`
        : '';
      return [`- ${off.scenario.title}, skills off against baseline${i + 1} (${dir}): ${cpu}${single}`];
    });
  });
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
