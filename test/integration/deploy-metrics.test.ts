import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

const ROOT = new URL('../../deploy/', import.meta.url);
/** metric names in PromQL text: gw_…, with a histogram's series suffix stripped */
const metricNames = (text: string): string[] => [...new Set([...text.matchAll(/\bgw_[a-z0-9_]+/g)].map(([m]) => m.replace(/_(bucket|sum|count)$/, '')))];

describe('the shipped dashboard and alert rules query metrics the gateway exports', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(() => gw.close());

  for (const file of ['grafana/dashboard.json', 'prometheus/alerts.yml']) {
    it(`every metric ${file} queries is on /metrics`, async () => {
      const text = readFileSync(new URL(file, ROOT), 'utf8');
      const queried = metricNames(text);
      assert.ok(queried.length > 3, 'the file queries gateway metrics');
      const exported = await (await fetch(`${gw.url}/metrics`)).text();
      const missing = queried.filter((name) => !exported.includes(`# TYPE ${name} `));
      assert.deepEqual(missing, [], `queried by ${file} but not exported`);
    });
  }
});
