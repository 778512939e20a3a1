import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AggregatorRegistry, Counter, Histogram, Registry } from 'prom-client';
import { HotCounter, HotHistogram } from '../../src/telemetry/hot-metrics.js';

const BOUNDS = [0.001, 0.01, 0.1, 1];

/** sample lines as `name{sorted labels} value`, so label order does not matter */
function samples(text: string): string[] {
  return text
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const m = /^([^{ ]+)(?:\{(.*)\})? (.+)$/.exec(l) as RegExpExecArray;
      const labels = (m[2] ?? '').split(',').filter(Boolean).sort().join(',');
      return `${m[1]}{${labels}} ${Number(m[3])}`;
    })
    .sort();
}

describe('hot-path metrics', () => {
  it('expose exactly what prom-client\'s own counter and histogram expose for the same observations', async () => {
    const hot = new Registry();
    const ref = new Registry();
    const hc = new HotCounter('t_requests_total', 'h', ['surface', 'status'], hot);
    const hh = new HotHistogram('t_seconds', 'h', ['surface'], BOUNDS, hot);
    const rc = new Counter({ name: 't_requests_total', help: 'h', labelNames: ['surface', 'status'], registers: [ref] });
    const rh = new Histogram({ name: 't_seconds', help: 'h', labelNames: ['surface'], buckets: BOUNDS, registers: [ref] });
    const observations: Array<[string, string, number]> = [
      ['chat', '200', 0.0004],
      ['chat', '200', 0.02],
      ['chat', '502', 3],
      ['messages', '200', 0.001],
      ['messages', '200', 0.5],
    ];
    for (const [surface, status, seconds] of observations) {
      hc.inc([surface, status]);
      rc.inc({ surface, status });
      hh.observe([surface], seconds);
      rh.observe({ surface }, seconds);
    }
    hc.inc(['chat', '200'], 2.5);
    rc.inc({ surface: 'chat', status: '200' }, 2.5);
    assert.deepEqual(samples(await hot.metrics()), samples(await ref.metrics()));
  });

  it('sum across replicas through prom-client\'s AggregatorRegistry', async () => {
    const replica = () => {
      const r = new Registry();
      return { r, h: new HotHistogram('t_seconds', 'h', ['surface'], BOUNDS, r), c: new HotCounter('t_total', 'h', ['surface'], r) };
    };
    const a = replica();
    const b = replica();
    a.h.observe(['chat'], 0.005);
    b.h.observe(['chat'], 0.5);
    a.c.inc(['chat'], 2);
    b.c.inc(['chat'], 3);
    const fleet = samples(await AggregatorRegistry.aggregate([await a.r.getMetricsAsJSON(), await b.r.getMetricsAsJSON()]).metrics());
    assert.ok(fleet.includes('t_total{surface="chat"} 5'), fleet.join('\n'));
    assert.ok(fleet.includes('t_seconds_count{surface="chat"} 2'));
    assert.ok(fleet.includes('t_seconds_bucket{le="0.01",surface="chat"} 1'));
    assert.ok(fleet.includes('t_seconds_bucket{le="+Inf",surface="chat"} 2'));
  });
});
