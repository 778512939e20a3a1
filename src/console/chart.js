// Two charts drawn as SVG: stacked bars over time, and arms compared side by
// side. Every mark carries a <title>, so hovering shows the exact figure.

import { fmt, h, s } from './dom.js';

export const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];
export const ARM_COLORS = { treatment: '#e15759', control: '#4e79a7', shadow: '#b07aa1' };

/** Up to `count` round tick values from 0 to at least `max`. */
function ticks(max, count = 4) {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((m) => m >= raw) ?? raw;
  const out = [];
  for (let v = 0; v < max + step / 2; v += step) out.push(v);
  return out;
}

const swatch = (color) => s('svg', { class: 'swatch', viewBox: '0 0 10 10', 'aria-hidden': 'true' }, s('rect', { width: 10, height: 10, rx: 2, fill: color }));

const legend = (entries) => h('ul', { class: 'legend' }, entries.map(([name, color]) => h('li', {}, swatch(color), name)));

/**
 * Stacked bars, one per time bucket: `buckets` are start times (ms), each
 * series `{ name, values }` has one value per bucket; `label(ms)` names a
 * bucket and `format(n)` a value.
 */
export function timeChart({ buckets, series, label, format, title }) {
  const W = 820;
  const H = 260;
  const m = { left: 64, right: 36, top: 12, bottom: 30 };
  const plotW = W - m.left - m.right;
  const plotH = H - m.top - m.bottom;
  const totals = buckets.map((_, i) => series.reduce((sum, se) => sum + (se.values[i] ?? 0), 0));
  const yTicks = ticks(Math.max(0, ...totals));
  const yMax = yTicks[yTicks.length - 1];
  const y = (v) => m.top + plotH - (v / yMax) * plotH;
  const band = plotW / Math.max(1, buckets.length);
  const barW = Math.max(1, band * 0.72);
  const every = Math.max(1, Math.ceil(buckets.length / 8));

  const grid = yTicks.map((t) => s('g', {}, s('line', { class: 'grid', x1: m.left, x2: W - m.right, y1: y(t), y2: y(t) }), s('text', { class: 'tick', x: m.left - 6, y: y(t) + 4, 'text-anchor': 'end' }, format(t))));
  const bars = buckets.flatMap((start, i) => {
    let base = 0;
    return series.map((se, k) => {
      const v = se.values[i] ?? 0;
      if (v === 0) return null;
      const rect = s('rect', { class: 'bar', x: m.left + i * band + (band - barW) / 2, y: y(base + v), width: barW, height: Math.max(1, y(base) - y(base + v)), fill: PALETTE[k % PALETTE.length] }, s('title', {}, `${se.name} · ${label(start)}: ${format(v)}`));
      base += v;
      return rect;
    });
  });
  const xLabels = buckets.map((start, i) => (i % every === 0 ? s('text', { class: 'tick', x: m.left + i * band + band / 2, y: H - 10, 'text-anchor': 'middle' }, label(start)) : null));
  const axis = s('line', { class: 'axis', x1: m.left, x2: W - m.right, y1: y(0), y2: y(0) });
  const chart = s('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title }, s('title', {}, title), grid, bars, axis, xLabels);
  return h('figure', { class: 'figure' }, chart, legend(series.map((se, k) => [se.name, PALETTE[k % PALETTE.length]])));
}

/**
 * Rates (shares from 0 to 1) of each arm side by side, one group per metric:
 * `metrics` are `{ name, values: { arm: rate|null }, intervals?: { arm: [lo, hi] } }`.
 * A 95% interval is drawn as a whisker across the bar's end.
 */
export function armChart({ metrics, arms, title }) {
  const W = 820;
  const rowH = 16;
  const gap = 14;
  const m = { left: 190, right: 70, top: 8 };
  const plotW = W - m.left - m.right;
  const groupH = arms.length * rowH + gap;
  const H = m.top + metrics.length * groupH + 24;
  const x = (v) => m.left + v * plotW;
  const marks = metrics.map((metric, g) => {
    const top = m.top + g * groupH;
    const rows = arms.map((arm, r) => {
      const v = metric.values[arm];
      const yy = top + r * rowH;
      const ci = metric.intervals?.[arm];
      if (typeof v !== 'number') return s('text', { class: 'tick muted', x: m.left + 4, y: yy + rowH - 4 }, `${arm}: no data`);
      return s(
        'g',
        {},
        s('rect', { class: 'bar', x: m.left, y: yy + 2, width: Math.max(1, x(v) - m.left), height: rowH - 4, fill: ARM_COLORS[arm] }, s('title', {}, `${metric.name} · ${arm}: ${fmt.pct(v)}${ci ? ` (95% ${fmt.pct(ci[0])} – ${fmt.pct(ci[1])})` : ''}`)),
        ci ? s('path', { class: 'whisker', d: `M${x(ci[0])},${yy + 4}v${rowH - 8}M${x(ci[0])},${yy + rowH / 2}H${x(ci[1])}M${x(ci[1])},${yy + 4}v${rowH - 8}` }) : null,
        s('text', { class: 'tick', x: x(Math.max(v, ci?.[1] ?? 0)) + 6, y: yy + rowH - 4 }, fmt.pct(v)),
      );
    });
    return s('g', {}, s('text', { class: 'label', x: m.left - 10, y: top + (arms.length * rowH) / 2 + 4, 'text-anchor': 'end' }, metric.name), rows);
  });
  const scale = [0, 0.25, 0.5, 0.75, 1].map((t) => s('g', {}, s('line', { class: 'grid', x1: x(t), x2: x(t), y1: m.top, y2: H - 20 }), s('text', { class: 'tick', x: x(t), y: H - 6, 'text-anchor': 'middle' }, fmt.pct(t))));
  const chart = s('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title }, s('title', {}, title), scale, marks);
  return h('figure', { class: 'figure' }, chart, legend(arms.map((a) => [a, ARM_COLORS[a]])));
}
