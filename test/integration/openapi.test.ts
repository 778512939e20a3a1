import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OPERATIONS, openApiDocument, openApiPath } from '../../src/api/openapi.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { registeredRoutes } from '../helpers/routes.js';

interface Doc {
  openapi: string;
  paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: Record<string, unknown> }> }; externalDocs?: { url: string }; parameters?: Array<{ name: string; in: string }> }>>;
}

describe('GET /openapi.json', () => {
  let gw: TestGateway;
  let doc: Doc;
  before(async () => {
    gw = await startTestGateway({ env: { GW_METRICS_PUBLIC: '1' } });
    const res = await fetch(`${gw.url}/openapi.json`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /application\/json/);
    doc = (await res.json()) as Doc;
  });
  after(() => gw.close());

  const operations = () => Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, op })));

  it('is OpenAPI 3.1 and lists exactly the routes src/main.ts registers', async () => {
    assert.equal(doc.openapi, '3.1.0');
    const registered = (await registeredRoutes()).map((r) => `${r.method} ${openApiPath(r.path)}`).sort();
    assert.deepEqual(operations().map((o) => o.key).sort(), registered);
  });

  it('describes the gateway\'s own JSON bodies by the TypeBox schemas the handlers validate with, and the vendor routes by the vendor\'s API', () => {
    for (const { key, op } of operations()) {
      const [method, path] = key.split(' ') as [string, string];
      const entry = Object.entries(OPERATIONS).find(([k]) => k.split(' ')[0] === method && openApiPath(k.split(' ')[1] as string) === path)?.[1];
      assert.ok(entry, key);
      if (entry.vendor) {
        assert.equal(op.requestBody, undefined, `${key}: a vendor route carries no body schema`);
        assert.match(op.externalDocs?.url ?? '', /^https:\/\//, `${key}: names the vendor's reference`);
      } else if (method === 'POST') {
        const schema = op.requestBody?.content['application/json']?.schema;
        assert.ok(schema, `${key}: a POST route of the gateway's own has a body schema`);
        assert.deepEqual(schema, JSON.parse(JSON.stringify(entry.body)), `${key}: the served schema is the validating one`);
        assert.equal(schema['type'], 'object', key);
      }
      // every {param} of the path is declared
      for (const [, name] of path.matchAll(/\{(\w+)\}/g)) assert.ok(op.parameters?.some((p) => p.in === 'path' && p.name === name), `${key}: path parameter ${name}`);
    }
  });

  it('the admin org body lists exactly the fields the admin route accepts, and no others', async () => {
    const orgBody = doc.paths['/api/v1/admin/orgs']?.['post']?.requestBody?.content['application/json']?.schema;
    assert.equal(orgBody?.['additionalProperties'], false);
    assert.deepEqual(Object.keys(orgBody?.['properties'] as object).sort(), ['org_id', 'parent_org_id', 'plan', 'rps_cap']);
  });
});

describe('openApiDocument', () => {
  it('refuses a registered route without an entry, naming it (the start stops)', () => {
    assert.throws(() => openApiDocument([{ method: 'GET', path: '/healthz' }, { method: 'POST', path: '/api/v1/undocumented' }]), /no OPERATIONS entry for POST \/api\/v1\/undocumented/);
  });
});
