/**
 * The skill pool under load, read from the gateway's own /metrics before and
 * after a measured run: stages run, queue wait p99 (the upper bound of the
 * histogram bucket holding the 99th percentile), thread respawns, failed
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

/** What changed between two snapshots, as one line of the report. */
export function poolLine(before: PoolSnapshot, after: PoolSnapshot): string {
  const key = (s: Sample) => `${s.name}|${JSON.stringify(s.labels)}`;
  const was = new Map(before.map((s) => [key(s), s.value]));
  const delta = after.map((s) => ({ ...s, value: s.value - (was.get(key(s)) ?? 0) }));
  const sum = (pick: (s: Sample) => boolean) => delta.filter(pick).reduce((n, s) => n + s.value, 0);

  const stages = sum((s) => s.name === 'gw_skill_queue_wait_seconds_count');
  // cumulative buckets summed over stages, by upper bound
  const buckets = new Map<number, number>();
  for (const s of delta) {
    if (s.name !== 'gw_skill_queue_wait_seconds_bucket') continue;
    const le = s.labels['le'] === '+Inf' ? Infinity : Number(s.labels['le']);
    buckets.set(le, (buckets.get(le) ?? 0) + s.value);
  }
  const p99 = [...buckets].sort((a, b) => a[0] - b[0]).find(([, n]) => n >= stages * 0.99)?.[0];
  const failed = delta.filter((s) => s.name === 'gw_skill_outcomes_total' && FAILED.has(s.labels['outcome'] ?? '') && s.value > 0);
  const failedText = failed.length === 0 ? 'none' : failed.map((s) => `${s.labels['skill']} ${s.labels['outcome']} ${s.value}`).join(', ');
  const p99Text = p99 === undefined ? 'n/a' : p99 === Infinity ? 'over the largest bucket' : `≤ ${p99 * 1000} ms`;
  return (
    `${stages} stages, queue wait p99 ${p99Text}, thread respawns ${sum((s) => s.name === 'gw_skill_thread_respawns_total')}, ` +
    `failed stage outcomes: ${failedText}, requests relayed directly (failed open): ${sum((s) => s.name === 'gw_passthrough_total')}`
  );
}
