/**
 * The skill pool under load, read from the gateway's own /metrics before and
 * after a measured run: stages run, queue wait p99 (the upper bound of the
 * histogram bucket holding the 99th percentile), each stage's own queue wait
 * and run time p99 (a shadow stage beside dispatch waits at the lowest
 * priority, and its wait is not the request's), thread respawns, failed
 * stage outcomes and requests relayed directly (failed open).
 */

/** One Prometheus text line's metric name, labels and value. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = LINE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(LABEL)) labels[k!] = v!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

export type PoolSnapshot = Sample[];

export async function poolSnapshot(port: number): Promise<PoolSnapshot> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  if (!res.ok) throw new Error(`/metrics answered ${res.status}`);
  return parse(await res.text()).filter((s) => s.name.startsWith('gw_skill_') || s.name === 'gw_passthrough_total');
}

const FAILED = new Set(['ceiling_exceeded', 'overloaded', 'loop_stalled', 'error']);

/** The upper bound of the bucket holding the 99th percentile of a histogram's samples in `delta`, of one stage or of all. */
function percentile99(delta: Sample[], histogram: string, stage?: string): number | undefined {
  const mine = (s: Sample) => stage === undefined || s.labels['stage'] === stage;
  const count = delta.filter((s) => s.name === `${histogram}_count` && mine(s)).reduce((n, s) => n + s.value, 0);
  // cumulative buckets summed over the stages taken, by upper bound
  const buckets = new Map<number, number>();
  for (const s of delta) {
    if (s.name !== `${histogram}_bucket` || !mine(s)) continue;
    const le = s.labels['le'] === '+Inf' ? Infinity : Number(s.labels['le']);
    buckets.set(le, (buckets.get(le) ?? 0) + s.value);
  }
  return [...buckets].sort((a, b) => a[0] - b[0]).find(([, n]) => n >= count * 0.99)?.[0];
}

/** What changed between two snapshots, as one line of the report. */
export function poolLine(before: PoolSnapshot, after: PoolSnapshot): string {
  const key = (s: Sample) => `${s.name}|${JSON.stringify(s.labels)}`;
  const was = new Map(before.map((s) => [key(s), s.value]));
  const delta = after.map((s) => ({ ...s, value: s.value - (was.get(key(s)) ?? 0) }));
  const sum = (pick: (s: Sample) => boolean) => delta.filter(pick).reduce((n, s) => n + s.value, 0);

  const stages = sum((s) => s.name === 'gw_skill_queue_wait_seconds_count');
  const p99Text = (histogram: string, stage?: string) => {
    const p99 = percentile99(delta, histogram, stage);
    return p99 === undefined ? 'n/a' : p99 === Infinity ? 'over the largest bucket' : `≤ ${p99 * 1000} ms`;
  };
  // a stage's own figures: a shadow stage beside dispatch waits behind the others at the lowest priority, and its wait is not the request's
  const byStage = [...new Set(delta.filter((s) => s.name === 'gw_skill_queue_wait_seconds_count' && s.value > 0).map((s) => s.labels['stage']!))]
    .map((stage) => `${stage} ${p99Text('gw_skill_queue_wait_seconds', stage)} / ${p99Text('gw_skill_run_seconds', stage)}`)
    .join(', ');
  const failed = delta.filter((s) => s.name === 'gw_skill_outcomes_total' && FAILED.has(s.labels['outcome'] ?? '') && s.value > 0);
  const failedText = failed.length === 0 ? 'none' : failed.map((s) => `${s.labels['skill']} ${s.labels['outcome']} ${s.value}`).join(', ');
  return (
    `${stages} stages, queue wait p99 ${p99Text('gw_skill_queue_wait_seconds')} (by stage, queue wait / run p99: ${byStage || 'none'}), thread respawns ${sum((s) => s.name === 'gw_skill_thread_respawns_total')}, ` +
    `failed stage outcomes: ${failedText}, requests relayed directly (failed open): ${sum((s) => s.name === 'gw_passthrough_total')}`
  );
}
