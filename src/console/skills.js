// Skills: each key's per-key skills with their stored modes (GET
// /api/v1/settings; the skill list from GET /healthz), and one skill's
// scorecard (GET /api/v1/tenant/{org}/skills/{skill}/scorecard): treatment
// against control side by side, tripwires, a chart of the compared rates and
// the deployment history.

import { api } from './api.js';
import { armChart } from './chart.js';
import { card, errorBox, field, fmt, h, kv, notice, select, table } from './dom.js';

export const title = 'Skills';

const WINDOWS = ['15m', '1h', '24h', '7d'];
/** the rates the scorecard compares between arms, where it keeps them, and their confidence intervals' names */
const RATES = [
  ['generic_metrics', 'upstream_error_rate'],
  ['generic_metrics', 'client_retry_rate'],
  ['generic_metrics', 'fail_open_rate'],
  ['downstream_ai_metrics', 'tool_call_fidelity'],
  ['downstream_ai_metrics', 'client_friction_rate'],
  ['downstream_ai_metrics', 'task_success_rate'],
  ['downstream_ai_metrics', 'goodput'],
];
const STATUS_CLASS = { HEALTHY: 'ok', NO_DATA: 'muted', REGRESSION_WARNING: 'warn', BREAKER_ADVISORY: 'bad', CIRCUIT_BREAKER_TRIGGERED: 'bad' };

const storedMode = (key, skill) => key.skill_modes?.[skill] ?? (key.skills?.[skill] === true ? 'prod (flag on)' : 'off');
const keyName = (key) => key.dev_key_id ?? key.key_id;

const isPerArm = (v) => v !== null && typeof v === 'object' && 'treatment' in v && 'control' in v;

/** The figure's unit, from its name. */
function formatOf(name) {
  if (/(_rate|goodput|fidelity)$/.test(name)) return fmt.pct;
  if (/_ms( p\d+)?$/.test(name)) return fmt.ms;
  if (/_usd$/.test(name)) return fmt.usd;
  return (v) => fmt.num(v, 2);
}

/** Every per-arm figure of a scorecard section as one table row each (percentile spreads as p50, p95, p99). */
function armRows(section, prefix = '') {
  return Object.entries(section ?? {}).flatMap(([name, value]) => {
    if (isPerArm(value)) {
      const spread = Object.values(value).find((v) => v !== null && typeof v === 'object');
      if (spread) return ['p50', 'p95', 'p99'].map((p) => ({ name: `${prefix}${name} ${p}`, values: Object.fromEntries(Object.entries(value).map(([arm, v]) => [arm, v?.[p] ?? null])) }));
      return [{ name: `${prefix}${name}`, values: value }];
    }
    if (value !== null && typeof value === 'object') return armRows(value, `${name.replaceAll('_', ' ')} · `);
    return [];
  });
}

function scorecardView(sc, arms) {
  const rows = [...armRows(sc.generic_metrics), ...armRows(sc.downstream_ai_metrics)];
  const compared = RATES.map(([section, name]) => ({ name, values: sc[section][name], intervals: sc.confidence_intervals?.[name] }));
  const split = sc.sample_ratio;
  return [
    card(
      'Scorecard',
      h('p', {}, h('span', { class: `badge ${STATUS_CLASS[sc.status] ?? ''}` }, sc.status), ` breaker action: ${sc.breaker_action} · computed over the ${sc.source.store} rows (${sc.source.window})`),
      kv([
        ['Samples', arms.map((a) => `${a} ${fmt.int(sc.sample_size[a])}`).join(' · ') + ` · total ${fmt.int(sc.sample_size.total)}`],
        ['Tripwires crossed', sc.breakers.length > 0 ? sc.breakers.join(', ') : 'none'],
        ['Anomalies', sc.anomalies.length > 0 ? sc.anomalies.join('; ') : 'none'],
        ['Warnings', sc.warnings.length > 0 ? sc.warnings.join('; ') : 'none'],
        ['Confounded', sc.confounded ? sc.confounded_reason : 'no'],
        ['Canary split', split ? `expected treatment ${fmt.pct(split.expected_treatment_share)}, observed ${fmt.pct(split.observed_treatment_share)} over ${fmt.int(split.units)} units (p = ${fmt.num(split.p_value, 4)}${split.mismatch ? ', MISMATCH' : ''})` : null],
      ]),
    ),
    card('Compared rates', h('p', { class: 'summary' }, 'Whiskers are 95% Wilson intervals: where they overlap, the difference may be noise.'), armChart({ metrics: compared, arms, title: `${sc.skill_id}: rates by arm` })),
    card(
      'Treatment and control',
      table([{ label: 'Figure', value: (r) => r.name }, ...arms.map((a) => ({ label: a, num: true, value: (r) => formatOf(r.name)(r.values[a]) }))], rows, { label: 'scorecard figures' }),
    ),
    Object.keys(sc.skill_specific_metrics ?? {}).length > 0 ? card('Reported by the skill', kv(Object.entries(sc.skill_specific_metrics))) : null,
    card(
      'Deployment history',
      table(
        [
          { label: 'When', value: (t) => fmt.time(t.timestamp) },
          { label: 'From', value: (t) => t.from_mode },
          { label: 'To', value: (t) => h('strong', {}, t.to_mode) },
          { label: 'Trigger', value: (t) => t.trigger_source },
          { label: 'Reason', value: (t) => fmt.text(t.reason) },
          { label: 'Key', value: (t) => h('span', { class: 'mono' }, t.key_id) },
        ],
        sc.deployment_history,
        { label: 'deployment history', empty: 'No transition recorded.' },
      ),
    ),
  ];
}

export async function render({ org, params, href, go }) {
  const [settings, health] = await Promise.all([api.settings(), api.health()]);
  const running = health.levers.skills;
  const skills = Object.keys(running);
  const keys = settings.dev_keys;
  if (keys.length === 0) return h('div', {}, h('h1', {}, title), notice(`Org ${org.org_id} has no developer key.`));
  const key = keys.find((k) => k.key_id === params.get('key') || k.dev_key_id === params.get('key')) ?? keys[0];
  const skill = skills.includes(params.get('skill')) ? params.get('skill') : (skills.find((sk) => storedMode(key, sk) !== 'off') ?? skills[0]);
  const window = WINDOWS.includes(params.get('window')) ? params.get('window') : '1h';
  const to = (change) => href('skills', undefined, { key: keyName(key), skill, window, ...change });

  const controls = h(
    'form',
    { class: 'controls', onsubmit: (e) => e.preventDefault() },
    field('Key', select('key', keys.map((k) => [keyName(k), keyName(k)]), keyName(key), { onchange: (e) => go(to({ key: e.target.value })) })),
    field('Skill', select('skill', skills, skill, { onchange: (e) => go(to({ skill: e.target.value })) })),
    field('Window', select('window', WINDOWS, window, { onchange: (e) => go(to({ window: e.target.value })) })),
  );
  const modes = table(
    [
      { label: 'Skill', value: (sk) => h('a', { href: to({ skill: sk }) }, sk) },
      { label: 'Stored mode', value: (sk) => h('strong', {}, storedMode(key, sk)) },
      { label: 'Locked', value: (sk) => (key.locked_skills?.[sk] ? 'yes' : 'no') },
      { label: 'On this replica', value: (sk) => running[sk] },
    ],
    skills,
    { label: 'skill modes', onRow: (sk) => go(to({ skill: sk })) },
  );

  let scorecard;
  try {
    const sc = await api.scorecard(org.org_id, skill, { window, key_id: key.key_id });
    scorecard = scorecardView(sc, sc.sample_size.shadow === undefined ? ['treatment', 'control'] : ['treatment', 'control', 'shadow']);
  } catch (err) {
    if (err.status === 401) throw err;
    scorecard = errorBox(err);
  }
  return h('div', {}, h('h1', {}, title), controls, card(`Modes of key ${keyName(key)} (${key.key_id})`, modes), h('h2', { class: 'section' }, `${skill} · key ${keyName(key)} · last ${window}`), scorecard);
}
