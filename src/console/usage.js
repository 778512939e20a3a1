// Usage: GET /api/v1/usage grouped by one dimension in time buckets, drawn as
// stacked bars, with each group's totals below.

import { api } from './api.js';
import { timeChart } from './chart.js';
import { card, errorBox, field, fmt, h, select, table } from './dom.js';

export const title = 'Usage';

const DIMENSIONS = ['model', 'provider', 'endpoint', 'key', 'team', 'feature', 'status', 'channel', 'cache_tier', 'tier', 'egress_mode', 'relay_reason', 'optimization_state', 'route', 'desk', 'pm', 'strategy', 'cost_centre', 'project'];
const METRICS = [
  ['requests', 'Requests', fmt.int],
  ['cost_usd', 'Cost (USD)', fmt.usd],
  ['tokens_in', 'Tokens in', fmt.int],
  ['tokens_out', 'Tokens out', fmt.int],
  ['cache_hits', 'Cache hits', fmt.int],
];
const WINDOWS = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000 };
const BUCKETS = ['hour', 'day', 'week'];
/** groups drawn one by one; the rest are summed as `other` */
const MAX_SERIES = 8;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The UTC start of the bucket holding `ms` (weeks start on Monday, as the gateway's do). */
function bucketStart(ms, bucket) {
  if (bucket === 'hour') return Math.floor(ms / HOUR) * HOUR;
  const day = Math.floor(ms / DAY) * DAY;
  return bucket === 'day' ? day : day - ((new Date(day).getUTCDay() + 6) % 7) * DAY;
}

const bucketLabel = (bucket) => (ms) => {
  const iso = new Date(ms).toISOString();
  return bucket === 'hour' ? `${iso.slice(5, 10)} ${iso.slice(11, 13)}h` : iso.slice(5, 10);
};

/** Every bucket the window touches, plus any the gateway answered with (its clock may differ from the browser's). */
function axis(rows, windowMs, bucket) {
  const step = { hour: HOUR, day: DAY, week: 7 * DAY }[bucket];
  const starts = new Set(rows.map((r) => Date.parse(r.bucket_start)));
  const now = Date.now();
  for (let t = bucketStart(now - windowMs, bucket); t <= now; t += step) starts.add(t);
  return [...starts].sort((a, b) => a - b);
}

export async function render({ params, href, go }) {
  const state = {
    group_by: DIMENSIONS.includes(params.get('group_by')) ? params.get('group_by') : 'model',
    metric: METRICS.some(([m]) => m === params.get('metric')) ? params.get('metric') : 'requests',
    window: WINDOWS[params.get('window')] ? params.get('window') : '24h',
    bucket: BUCKETS.includes(params.get('bucket')) ? params.get('bucket') : 'hour',
  };
  const change = (e) => go(href('usage', undefined, { ...state, [e.target.name]: e.target.value }));
  const controls = h(
    'form',
    { class: 'controls', onsubmit: (e) => e.preventDefault() },
    field('Group by', select('group_by', DIMENSIONS, state.group_by, { onchange: change })),
    field('Measure', select('metric', METRICS.map(([m, label]) => [m, label]), state.metric, { onchange: change })),
    field('Window', select('window', Object.keys(WINDOWS), state.window, { onchange: change })),
    field('Bucket', select('bucket', BUCKETS, state.bucket, { onchange: change })),
  );

  let answer;
  try {
    answer = await api.usage({ group_by: state.group_by, window: state.window, bucket: state.bucket });
  } catch (err) {
    if (err.status === 401) throw err;
    return h('div', {}, h('h1', {}, title), controls, errorBox(err));
  }
  const column = answer.group_by[0];
  const [, metricLabel, format] = METRICS.find(([m]) => m === state.metric);
  const groupOf = (row) => (row[column] === null || row[column] === undefined ? '(none)' : String(row[column]));

  const groups = new Map();
  for (const row of answer.data) {
    const g = groups.get(groupOf(row)) ?? { name: groupOf(row), requests: 0, cost_usd: 0, tokens_in: 0, tokens_out: 0, cache_hits: 0 };
    for (const [m] of METRICS) g[m] += row[m] ?? 0;
    groups.set(g.name, g);
  }
  const ranked = [...groups.values()].sort((a, b) => b[state.metric] - a[state.metric] || a.name.localeCompare(b.name));
  const drawn = new Set(ranked.slice(0, ranked.length > MAX_SERIES ? MAX_SERIES - 1 : MAX_SERIES).map((g) => g.name));
  const buckets = axis(answer.data, WINDOWS[state.window], state.bucket);
  const index = new Map(buckets.map((b, i) => [b, i]));
  const series = [...drawn].map((name) => ({ name, values: buckets.map(() => 0) }));
  const other = { name: 'other', values: buckets.map(() => 0) };
  for (const row of answer.data) {
    const target = series.find((se) => se.name === groupOf(row)) ?? other;
    target.values[index.get(Date.parse(row.bucket_start))] += row[state.metric] ?? 0;
  }
  if (drawn.size < groups.size) series.push(other);

  const total = (m) => ranked.reduce((sum, g) => sum + g[m], 0);
  const columns = [{ label: column, value: (g) => h('span', { class: 'group' }, g.name) }, ...METRICS.map(([m, label, f]) => ({ label, num: true, value: (g) => f(g[m]) }))];
  const totals = { name: 'total', ...Object.fromEntries(METRICS.map(([m]) => [m, total(m)])) };

  return h(
    'div',
    {},
    h('h1', {}, title),
    controls,
    card(
      `${metricLabel} by ${column}, per ${state.bucket}, last ${state.window}`,
      h('p', { class: 'summary' }, `${fmt.int(total('requests'))} requests · ${fmt.usd(total('cost_usd'))} · ${fmt.int(total('tokens_in'))} tokens in · ${fmt.int(total('tokens_out'))} tokens out`),
      ranked.length === 0 ? h('p', { class: 'empty' }, 'No requests in this window.') : timeChart({ buckets, series, label: bucketLabel(state.bucket), format, title: `${metricLabel} by ${column}` }),
    ),
    card(`Totals by ${column}`, table(columns, ranked.length === 0 ? [] : [...ranked, totals], { label: `usage by ${column}`, empty: 'No requests in this window.' })),
  );
}
