// Requests: the answering replica's inspector feed (GET /api/v1/requests) or
// the durable list (GET /api/v1/tenant/requests), filtered; one request's row,
// decision record (GET /api/v1/tenant/request/{id}) and log lines
// (GET /api/v1/logs/request/{id}).

import { api } from './api.js';
import { ARM_COLORS } from './chart.js';
import { card, errorBox, field, fmt, h, kv, notice, s, select, table } from './dom.js';

export const title = 'Requests';

/** Each list's filters: the query parameters its route takes, as docs/api.md names them. */
const SOURCES = {
  recent: { label: 'Recent (this replica)', filters: ['model', 'provider', 'endpoint', 'feature', 'cache'] },
  durable: { label: 'Durable list', filters: ['model', 'provider', 'surface', 'status', 'key_id', 'session_id', 'team', 'use_case', 'cache_tier', 'optimization_state'] },
};
const WINDOWS = ['15m', '1h', '24h', '7d', '30d'];

const idLink = (href, id) => h('a', { href: href('requests', id), class: 'mono' }, id);

/** the list's columns; a key is shown by its name (dev_key_id) when the org's settings give one */
const LIST_COLUMNS = (href, keyNames) => [
  { label: 'Time', value: (r) => h('span', { class: 'nowrap' }, fmt.time(r.ts)) },
  { label: 'Request', value: (r) => idLink(href, r.request_id) },
  { label: 'Key', value: (r) => h('span', { class: 'mono', title: r.key_id }, keyNames.get(r.key_id) ?? r.key_id) },
  { label: 'Model', value: (r) => fmt.text(r.model) },
  { label: 'Provider', value: (r) => r.provider },
  { label: 'Route', value: (r) => r.endpoint ?? r.surface },
  { label: 'Status', num: true, value: (r) => h('span', { class: r.status >= 400 ? 'bad' : undefined }, String(r.status)) },
  { label: 'Latency', num: true, value: (r) => fmt.ms(r.latency_ms) },
  { label: 'Tokens in/out', num: true, value: (r) => `${fmt.int(r.tokens_in)} / ${fmt.int(r.tokens_out)}` },
  { label: 'Cost', num: true, value: (r) => fmt.usd(r.cost_usd) },
];

export async function render(ctx) {
  return ctx.arg === undefined ? list(ctx) : detail(ctx);
}

async function list({ org, params, href, go }) {
  const source = SOURCES[params.get('source')] ? params.get('source') : 'recent';
  const { filters } = SOURCES[source];
  const window = WINDOWS.includes(params.get('window')) ? params.get('window') : '1h';
  const values = Object.fromEntries(filters.map((f) => [f, params.get(f) ?? '']));

  const apply = (e) => {
    e.preventDefault();
    const form = new FormData(e.target.form ?? e.target);
    go(href('requests', undefined, Object.fromEntries([...form].map(([k, v]) => [k, String(v).trim()]))));
  };
  const controls = h(
    'form',
    { class: 'controls', onsubmit: apply },
    field('List', select('source', Object.entries(SOURCES).map(([k, v]) => [k, v.label]), source, { onchange: apply })),
    source === 'durable' ? field('Window', select('window', WINDOWS, window, { onchange: apply })) : null,
    filters.map((f) => field(f, h('input', { name: f, value: values[f], placeholder: 'any', size: 14 }))),
    h('button', { type: 'submit' }, 'Filter'),
  );
  const query = Object.fromEntries(Object.entries(values).filter(([, v]) => v !== ''));
  // a key may be named as the org's settings name it (dev_key_id); the route compares gateway key ids
  if (query.key_id) query.key_id = org.dev_keys.find((k) => k.dev_key_id === query.key_id)?.key_id ?? query.key_id;
  let answer;
  try {
    answer = source === 'recent' ? await api.recent({ tenant_id: org.org_id, ...query }) : await api.durable({ window, ...query });
  } catch (err) {
    if (err.status === 401) throw err;
    return h('div', {}, h('h1', {}, title), controls, errorBox(err));
  }
  const where =
    source === 'recent'
      ? `The last ${answer.data.length} requests of org ${org.org_id} this replica (pid ${answer.source.pid}) served, newest first. Behind a load balancer, other replicas keep their own.`
      : `Requests of org ${org.org_id} in the last ${answer.window}, newest first, from the durable store (every replica answers alike).`;
  return h(
    'div',
    {},
    h('h1', {}, title),
    controls,
    card(SOURCES[source].label, h('p', { class: 'summary' }, where), table(LIST_COLUMNS(href, new Map(org.dev_keys.map((k) => [k.key_id, k.dev_key_id ?? k.key_id]))), answer.data, { label: 'requests', empty: 'No request matches.', onRow: (r) => go(href('requests', r.request_id)) })),
  );
}

/** The stages of a decision record as a waterfall: each bar starts where the previous one ended. */
function stageChart(stages) {
  const total = stages.reduce((sum, st) => sum + st.ms, 0) || 1;
  const W = 820;
  const rowH = 18;
  const left = 200;
  const plotW = W - left - 80;
  let at = 0;
  const rows = stages.map((st, i) => {
    const x = left + (at / total) * plotW;
    at += st.ms;
    return s(
      'g',
      {},
      s('text', { class: 'label', x: left - 8, y: i * rowH + 13, 'text-anchor': 'end' }, st.stage),
      s('rect', { class: 'bar', x, y: i * rowH + 3, width: Math.max(1, (st.ms / total) * plotW), height: rowH - 6, fill: st.stage.startsWith('upstream') ? ARM_COLORS.control : ARM_COLORS.shadow }, s('title', {}, `${st.stage}: ${fmt.ms(st.ms)}`)),
      s('text', { class: 'tick', x: x + Math.max(1, (st.ms / total) * plotW) + 6, y: i * rowH + 13 }, `${fmt.ms(st.ms)}${st.running ? ' (running)' : ''}`),
    );
  });
  return s('svg', { class: 'chart', viewBox: `0 0 ${W} ${stages.length * rowH + 6}`, role: 'img', 'aria-label': 'stage durations' }, rows);
}

function decisionCard(d) {
  return card(
    'Decision record',
    kv([
      ['Served by', d.served_by],
      ['Route', `${d.route.provider} · ${fmt.text(d.route.model)} → ${fmt.text(d.route.routed_model)}${d.route.reason ? ` (${d.route.reason})` : ''}`],
      ['Cache', `${d.cache.result}${d.cache.similarity !== undefined ? ` (similarity ${fmt.num(d.cache.similarity, 3)})` : ''}`],
      ['Budget', d.budget ? `reserved ${fmt.usd(d.budget.reserved_usd)}, settled ${fmt.usd(d.budget.settled_usd)}` : null],
      ['Rate limit', d.rate_limit ? `${d.rate_limit.remaining} remaining` : null],
      ['Fail-open', d.fail_open?.reason ?? null],
    ]),
    h('h3', {}, 'Stages'),
    d.stages.length === 0 ? h('p', { class: 'empty' }, 'No stage timings.') : stageChart(d.stages),
    h('h3', {}, 'Skills'),
    table(
      [
        { label: 'Skill', value: (x) => x.skill },
        { label: 'Mode', value: (x) => x.mode },
        { label: 'Arm', value: (x) => x.arm },
        { label: 'Outcome', value: (x) => x.outcome },
        { label: 'Time', num: true, value: (x) => fmt.ms(x.ms) },
        { label: 'Detail', value: (x) => fmt.text(x.detail) },
      ],
      d.skills,
      { label: 'skills', empty: 'No skill stage ran.' },
    ),
  );
}

const ROW_HIDDEN = new Set(['skills', 'decision']);

/** the row's columns that hold a value (the empty ones are named in one line) */
function rowCard(row) {
  const arms = Object.entries(row.skills ?? {});
  const columns = Object.entries(row).filter(([k]) => !ROW_HIDDEN.has(k));
  const empty = columns.filter(([, v]) => v === null || v === '').map(([k]) => k);
  return card(
    'Row',
    kv(columns.filter(([k]) => !empty.includes(k)), { class: 'kv two' }),
    empty.length > 0 ? h('p', { class: 'summary' }, `Empty: ${empty.join(', ')}`) : null,
    arms.length > 0 ? [h('h3', {}, 'Skill arms'), kv(arms.map(([skill, c]) => [skill, `${c.arm} · ${c.outcome}${c.detail ? ` · ${JSON.stringify(c.detail)}` : ''}`]))] : null,
  );
}

function logsCard(lines) {
  const extra = (line) => {
    const rest = Object.fromEntries(Object.entries(line).filter(([k]) => !['seq', 'ts', 'level', 'logger', 'msg', 'time', 'req_id', 'pid', 'hostname'].includes(k)));
    return Object.keys(rest).length === 0 ? '' : JSON.stringify(rest);
  };
  return table(
    [
      { label: '#', num: true, value: (l) => String(l.seq) },
      { label: 'Time', value: (l) => fmt.time(typeof l.ts === 'number' ? new Date(l.ts).toISOString() : l.ts) },
      { label: 'Level', value: (l) => h('span', { class: `level level-${l.level}` }, String(l.level)) },
      { label: 'Logger', value: (l) => fmt.text(l.logger) },
      { label: 'Message', value: (l) => l.msg },
      { label: 'Fields', value: (l) => h('span', { class: 'mono small' }, extra(l)) },
    ],
    lines,
    { label: 'log lines', empty: 'This request wrote no log line at or above the gateway\'s log level.' },
  );
}

async function detail({ org, arg: id, href }) {
  // the durable read carries the decision record; the inspector feed and the log lines are the answering replica's
  const [durable, logs] = await Promise.allSettled([api.request(id), api.logs(id, org.org_id)]);
  for (const r of [durable, logs]) if (r.status === 'rejected' && r.reason.status === 401) throw r.reason;
  let row = durable.status === 'fulfilled' ? durable.value.request : undefined;
  const notes = [];
  if (durable.status === 'rejected') {
    notes.push(notice(`Durable record: ${durable.reason.message}`));
    const recent = await api.recent({ tenant_id: org.org_id });
    row = recent.data.find((r) => r.request_id === id);
  }
  const back = h('p', {}, h('a', { href: href('requests') }, '← Requests'));
  if (!row) return h('div', {}, back, h('h1', {}, 'Request ', h('span', { class: 'mono' }, id)), errorBox({ type: 'not_found', message: `no request ${id} of org ${org.org_id} is readable with this key` }));
  return h(
    'div',
    {},
    back,
    h('h1', {}, 'Request ', h('span', { class: 'mono' }, id)),
    notes,
    durable.status === 'fulfilled' ? decisionCard(durable.value.decision) : null,
    rowCard(row),
    card('Log lines', logs.status === 'fulfilled' ? logsCard(logs.value.data) : notice(`${logs.reason.message}. A request's log lines are kept by the replica that served it, for its last 100 requests.`)),
  );
}
