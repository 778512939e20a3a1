// Spend & access: the org's spend cap and model access as GET
// /api/v1/settings reports them, changed through POST
// /api/v1/spend_cap/update and POST /api/v1/model_access/update; its stored
// provider keys (hints only) and developer keys.

import { api } from './api.js';
import { card, errorBox, field, fmt, h, kv, s, select, table } from './dom.js';

export const title = 'Spend & access';

/** consumption against the cap as a bar */
function meter(consumed, cap) {
  const share = cap > 0 ? Math.min(1, consumed / cap) : 1;
  return s(
    'svg',
    { class: 'meter', viewBox: '0 0 400 14', role: 'img', 'aria-label': `${fmt.pct(share)} of the cap used` },
    s('rect', { class: 'meter-track', width: 400, height: 14, rx: 4 }),
    s('rect', { class: share >= 1 ? 'meter-full' : 'meter-used', width: Math.max(0, share * 400), height: 14, rx: 4 }),
  );
}

/** A form that posts through `submit` and shows the gateway's refusal in place. */
function form(submit, ...children) {
  const message = h('p', { class: 'error', role: 'alert', hidden: true });
  const el = h('form', { class: 'controls' }, children, h('button', { type: 'submit' }, 'Save'), message);
  el.addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      await submit(new FormData(el));
    } catch (err) {
      message.replaceWith(errorBox(err));
    }
  });
  return el;
}

function spendCapCard(cap, reload) {
  const save = form(
    async (data) => {
      const raw = String(data.get('cap_usd')).trim();
      await api.setSpendCap({ cap_usd: raw === '' ? null : Number(raw), period: data.get('period') });
      await reload();
    },
    field('Cap (USD, empty for none)', h('input', { name: 'cap_usd', type: 'number', min: 0, step: 'any', value: cap.cap_usd ?? '' })),
    field('Period', select('period', ['month', 'day'], cap.period ?? 'month')),
  );
  return card(
    'Spend cap',
    cap.cap_usd === null
      ? h('p', {}, 'No spend cap: requests are not refused for spend.')
      : [
          h('p', { class: 'summary' }, `${fmt.usd(cap.consumed_usd)} of ${fmt.usd(cap.cap_usd)} this ${cap.period}; resets ${fmt.time(cap.resets_at)}`),
          meter(cap.consumed_usd ?? 0, cap.cap_usd),
        ],
    save,
  );
}

function modelAccessCard(enabled, catalog, reload) {
  const ids = [...new Set([...catalog, ...(enabled ?? [])])].sort();
  const all = h('input', { type: 'checkbox', name: 'all', checked: enabled === null });
  const boxes = ids.map((id) => h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'model', value: id, checked: enabled === null || enabled.includes(id) }), id));
  const save = form(
    async (data) => {
      await api.setModelAccess({ models: data.get('all') ? null : data.getAll('model').map(String) });
      await reload();
    },
    h('label', { class: 'check' }, all, 'Every catalog model (no restriction)'),
    h('div', { class: 'checks' }, boxes),
  );
  return card(
    'Model access',
    h('p', { class: 'summary' }, enabled === null ? 'Every catalog model is enabled.' : enabled.length === 0 ? 'No model is enabled: every call is refused.' : `Enabled: ${enabled.join(', ')}`),
    save,
  );
}

export async function render({ reload }) {
  const [settings, models] = await Promise.all([api.settings(), api.models()]);
  return h(
    'div',
    {},
    h('h1', {}, title),
    card('Org', kv([['Org', settings.org_id], ['Parent org', settings.parent_org_id], ['Plan', settings.plan], ['Rate limit', `${fmt.int(settings.rps_cap)} requests/s`]])),
    spendCapCard(settings.spend_cap, reload),
    modelAccessCard(settings.model_access.models, models.data.map((m) => m.id), reload),
    card(
      'Stored provider keys',
      table(
        [
          { label: 'Provider', value: (k) => k.provider },
          { label: 'Kind', value: (k) => k.credential_kind },
          { label: 'Key ends in', value: (k) => h('span', { class: 'mono' }, k.key_hint) },
        ],
        settings.vendor_keys,
        { label: 'stored provider keys', empty: 'None: calls carry their own provider credential.' },
      ),
    ),
    card(
      'Developer keys',
      table(
        [
          { label: 'Key id', value: (k) => h('span', { class: 'mono' }, k.key_id) },
          { label: 'Name', value: (k) => fmt.text(k.dev_key_id) },
        ],
        settings.dev_keys,
        { label: 'developer keys' },
      ),
    ),
  );
}

