import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createMetrics, LABEL_VALUE_CAP } from '../../src/telemetry/metrics.js';
import { usageRow } from '../helpers/usage-rows.js';

/** the value of one sample line `name{labels}` exactly as exposed; undefined when absent */
const sample = (text: string, series: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe('operator metrics', () => {
  it('count tokens and cost per model and per tenant, the values past the cap under other', async () => {
    const m = createMetrics();
    const now = Date.UTC(2026, 0, 5, 10);
    for (let i = 0; i <= LABEL_VALUE_CAP; i++) {
      m.recordRow(usageRow(i, now, { model: `model-${i}`, tenant_id: `tenant-${i}`, tokens_in: 10, tokens_out: 2, cost_usd: 0.5 }), undefined, []);
    }
    // a model already kept stays itself
    m.recordRow(usageRow(0, now, { model: 'model-0', tenant_id: 'tenant-0', tokens_in: 10, tokens_out: 2, cost_usd: 0.5 }), undefined, []);
    const text = await m.registry.metrics();
    assert.equal(sample(text, 'gw_model_tokens_total{model="model-0",kind="input"}'), 20);
    assert.equal(sample(text, 'gw_model_tokens_total{model="model-99",kind="output"}'), 2);
    assert.equal(sample(text, `gw_model_tokens_total{model="model-${LABEL_VALUE_CAP}",kind="input"}`), undefined);
    assert.equal(sample(text, 'gw_model_tokens_total{model="other",kind="input"}'), 10);
    assert.equal(sample(text, 'gw_model_cost_usd_total{model="other"}'), 0.5);
    assert.equal(sample(text, 'gw_tenant_tokens_total{tenant="tenant-0",kind="input"}'), 20);
    assert.equal(sample(text, 'gw_tenant_tokens_total{tenant="other",kind="output"}'), 2);
    assert.equal(sample(text, 'gw_tenant_cost_usd_total{tenant="other"}'), 0.5);
    const models = new Set([...text.matchAll(/^gw_model_cost_usd_total\{model="([^"]+)"\}/gm)].map((x) => x[1]));
    assert.equal(models.size, LABEL_VALUE_CAP + 1, 'the cap and other');
  });

  it('time a stream\'s first byte, and bucket request durations up to the stream deadline', async () => {
    const m = createMetrics({ streamDeadlineS: 900 });
    m.recordRow(usageRow(0, Date.UTC(2026, 0, 5, 10), { surface: 'messages', channel: 'stream' }), 250, []);
    m.countAnswer('messages', 200, 'msgvendor', 700);
    const text = await m.registry.metrics();
    assert.equal(sample(text, 'gw_stream_time_to_first_byte_seconds_bucket{surface="messages",le="0.25"}'), 1);
    assert.equal(sample(text, 'gw_stream_time_to_first_byte_seconds_bucket{surface="messages",le="0.1"}'), 0);
    const bounds = [...text.matchAll(/^gw_request_duration_seconds_bucket\{surface="messages",le="([^"]+)"\}/gm)].map((x) => x[1]);
    assert.deepEqual(bounds.slice(-4), ['300', '600', '900', '+Inf'], 'the last bucket is the stream deadline');
    assert.equal(sample(text, 'gw_request_duration_seconds_bucket{surface="messages",le="600"}'), 0);
    assert.equal(sample(text, 'gw_request_duration_seconds_bucket{surface="messages",le="900"}'), 1);
  });

  it('count skill outcomes and the tokens each skill saved', async () => {
    const m = createMetrics();
    const skills = [
      { skill: 'prompt_compaction', mode: 'prod', arm: 'prod', outcome: 'applied', ms: 1, tokens_saved: 120 },
      { skill: 'semantic_cache', mode: 'shadow', arm: 'shadow', outcome: 'shadow', ms: 1 },
    ];
    m.recordRow(usageRow(0, Date.UTC(2026, 0, 5, 10)), undefined, skills);
    const text = await m.registry.metrics();
    assert.equal(sample(text, 'gw_skill_outcomes_total{skill="prompt_compaction",outcome="applied"}'), 1);
    assert.equal(sample(text, 'gw_skill_outcomes_total{skill="semantic_cache",outcome="shadow"}'), 1);
    assert.equal(sample(text, 'gw_skill_tokens_saved_total{skill="prompt_compaction"}'), 120);
  });
});
