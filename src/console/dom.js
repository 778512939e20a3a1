// Building blocks: elements from data (text only, never parsed HTML), tables,
// key/value lists and number formats.

const SVG_NS = 'http://www.w3.org/2000/svg';

function build(el, attrs, children) {
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** An HTML element: `h('td', { class: 'num' }, text, node, …)`; `on<event>` attributes are listeners. */
export const h = (tag, attrs, ...children) => build(document.createElement(tag), attrs, children);

/** An SVG element, as `h`. */
export const s = (tag, attrs, ...children) => build(document.createElementNS(SVG_NS, tag), attrs, children);

const DASH = '–';

export const fmt = {
  int: (n) => (typeof n === 'number' ? Math.round(n).toLocaleString('en-US') : DASH),
  num: (n, digits = 2) => (typeof n === 'number' ? n.toLocaleString('en-US', { maximumFractionDigits: digits }) : DASH),
  usd: (n) => (typeof n === 'number' ? `$${n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: n !== 0 && Math.abs(n) < 0.01 ? 6 : 2 })}` : DASH),
  ms: (n) => (typeof n === 'number' ? `${n.toLocaleString('en-US', { maximumFractionDigits: Math.abs(n) < 10 ? 2 : 1 })} ms` : DASH),
  pct: (n) => (typeof n === 'number' ? `${(n * 100).toLocaleString('en-US', { maximumFractionDigits: 1 })}%` : DASH),
  /** ISO time as UTC, to the second */
  time: (iso) => (iso ? `${String(iso).replace('T', ' ').slice(0, 19)} UTC` : DASH),
  text: (v) => (v === undefined || v === null || v === '' ? DASH : typeof v === 'object' ? JSON.stringify(v) : String(v)),
};

/**
 * A table: `columns` are `{ label, value(row) → text or Node, num? }`;
 * `onRow(row)` makes rows clickable (and reachable by keyboard).
 */
export function table(columns, rows, { onRow, empty = 'Nothing to show.', label } = {}) {
  if (rows.length === 0) return h('p', { class: 'empty' }, empty);
  const head = h('tr', {}, columns.map((c) => h('th', { class: c.num ? 'num' : undefined, scope: 'col' }, c.label)));
  const body = rows.map((row) => {
    const tr = h('tr', {}, columns.map((c) => h('td', { class: c.num ? 'num' : undefined }, c.value(row) ?? DASH)));
    if (onRow) {
      tr.classList.add('link');
      tr.tabIndex = 0;
      tr.addEventListener('click', () => onRow(row));
      tr.addEventListener('keydown', (e) => e.key === 'Enter' && onRow(row));
    }
    return tr;
  });
  return h('div', { class: 'table-wrap' }, h('table', { 'aria-label': label }, h('thead', {}, head), h('tbody', {}, body)));
}

/** A definition list of `[label, value]` pairs (values as text or Nodes). */
export const kv = (pairs, attrs = { class: 'kv' }) => h('dl', attrs, pairs.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v instanceof Node ? v : fmt.text(v))]));

export const card = (title, ...children) => h('section', { class: 'card' }, title ? h('h2', {}, title) : null, children);

export const notice = (text) => h('p', { class: 'notice' }, text);

/** The gateway's refusal as it gave it: type and message. */
export const errorBox = (err) => h('p', { class: 'error', role: 'alert' }, err.type ? h('strong', {}, `${err.type}${err.status ? ` (${err.status})` : ''}: `) : null, err.message);

/** A `<select>` of `options` (values, or `[value, label]` pairs) with `value` chosen. */
export function select(name, options, value, attrs = {}) {
  return h('select', { name, id: name, ...attrs }, options.map((o) => {
    const [v, label] = Array.isArray(o) ? o : [o, o];
    return h('option', { value: v, selected: v === value }, label);
  }));
}

/** A labelled form field. */
export const field = (label, control) => h('label', { class: 'field' }, h('span', {}, label), control);
