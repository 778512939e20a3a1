import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { CatalogFileError, installCatalogFile } from '../../src/providers/catalog-file.js';
import { CATALOG, costUsd, lookupModel, SHIPPED_CATALOG } from '../../src/providers/catalog.js';
import { completion } from '../fakes/openai.js';
import { sendJson, startFakeVendor, type FakeVendor } from '../fakes/server.js';
import { oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { scratchDir } from '../helpers/scratch.js';

const dir = scratchDir('gw-catalog-');
let n = 0;
function catalogFile(doc: unknown): string {
  const file = join(dir, `catalog-${n++}.json`);
  writeFileSync(file, typeof doc === 'string' ? doc : JSON.stringify(doc));
  return file;
}

const FINE_TUNE = { id: 'ft:gpt-4o-mini:acme:support:abc123', provider: 'openai', input: 0.3, output: 1.2, cached_input: 0.15 };
const USAGE = { input_tokens: 12, output_tokens: 5, cached_tokens: 2 };

describe('GW_CATALOG_FILE: operator prices', () => {
  after(() => installCatalogFile(undefined));

  it('an entry of a shipped id replaces its price; a new id joins the catalog with its provider and price', () => {
    installCatalogFile(catalogFile([{ id: 'gpt-4o', provider: 'openai', input: 2, output: 8, cache_write: 2.5 }, FINE_TUNE]));
    const gpt4o = lookupModel('gpt-4o-2024-08-06');
    assert.deepEqual(gpt4o?.price, { input: 2, output: 8, cached_input: 2, cache_write: 2.5 });
    assert.equal(gpt4o?.context_window, 128_000, 'what the entry does not say stays as shipped');
    const ft = lookupModel(FINE_TUNE.id);
    assert.equal(ft?.provider, 'openai');
    assert.equal(costUsd(FINE_TUNE.id, USAGE, 'openai'), (10 * 0.3 + 2 * 0.15 + 5 * 1.2) / 1e6);
    assert.equal(CATALOG.length, SHIPPED_CATALOG.length + 1);
  });

  it('without a file the catalog is the shipped one again', () => {
    installCatalogFile(undefined);
    assert.equal(lookupModel(FINE_TUNE.id), undefined);
    assert.equal(lookupModel('gpt-4o')?.price.input, 2.5);
  });

  it('names every bad entry, and what is wrong with it', () => {
    const file = catalogFile([
      { id: 'ok-model', provider: 'openai', input: 1, output: 2 },
      { id: 'neg', provider: 'openai', input: -1, output: 2 },
      { id: 'who', provider: 'nowhere', input: 1, output: 2 },
      { id: 'typo', provider: 'openai', input: 1, output: 2, ouput: 3 },
      { provider: 'openai', input: 1, output: 2 },
      { id: 'ok-model', provider: 'openai', input: 1, output: 2 },
    ]);
    const err = (() => {
      try {
        installCatalogFile(file);
      } catch (e) {
        return e;
      }
      return assert.fail('expected a CatalogFileError');
    })();
    assert.ok(err instanceof CatalogFileError);
    const text = err.problems.join('\n');
    assert.match(text, /entry 1 \("neg"\): input must be >= 0/);
    assert.match(text, /entry 2 \("who"\): provider must be equal to one of the allowed values: openai, cloudx, msgvendor/);
    assert.match(text, /entry 3 \("typo"\): ouput must NOT have additional properties/);
    assert.match(text, /entry 4: must have required property 'id'/);
    assert.equal(err.problems.length, 5, 'one line per problem');
    assert.match(text, /entry 5 \("ok-model"\): the id appears more than once/);
    assert.ok(!/entry 0/.test(text), 'a good entry is not named');
    assert.equal(lookupModel('ok-model'), undefined, 'a bad file changes nothing');
  });

  it('a file that is not a JSON array is refused', () => {
    assert.throws(() => installCatalogFile(catalogFile('{"id":')), CatalogFileError);
    assert.throws(() => installCatalogFile(catalogFile({ models: [] })), /must be a JSON array/);
    assert.throws(() => installCatalogFile(join(dir, 'missing.json')), /ENOENT/);
  });

  it('`node src/main.ts` with a bad catalog file exits 1, naming the entry', () => {
    const main = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
    const run = spawnSync(process.execPath, ['--import', 'tsx', main], {
      env: { PATH: process.env['PATH'] ?? '', GW_HOST: '127.0.0.1', GW_PORT: '0', GW_CATALOG_FILE: catalogFile([{ id: 'neg', provider: 'openai', input: -1, output: 2 }]) },
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.equal(run.signal, null, 'start-up hung instead of exiting');
    assert.equal(run.status, 1);
    assert.match(run.stderr, /GW_CATALOG_FILE.*\n.*entry 0 \("neg"\): input must be >= 0/);
  });
});

describe('GW_CATALOG_FILE through the gateway', () => {
  const { bootstrap, devKey } = oneTenant('catalog');
  let fake: FakeVendor;
  let gw: TestGateway;
  before(async () => {
    fake = await startFakeVendor((req, res) => sendJson(res, 200, completion((JSON.parse(req.body.toString('utf8')) as { model: string }).model)));
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_OPENAI: fake.origin, GW_CATALOG_FILE: catalogFile([FINE_TUNE]) } });
  });
  after(async () => {
    await gw.close();
    await fake.close();
    installCatalogFile(undefined);
  });

  it('a priced fine-tune settles at the operator\'s price, is listed, and may be enabled by id', async () => {
    const auth = { authorization: `Bearer ${devKey}`, 'content-type': 'application/json' };
    const models = (await (await fetch(`${gw.url}/v1/models`, { headers: auth })).json()) as { data: Array<{ id: string }> };
    assert.ok(models.data.some((m) => m.id === FINE_TUNE.id));
    const access = await fetch(`${gw.url}/api/v1/model_access/update`, { method: 'POST', headers: auth, body: JSON.stringify({ models: [FINE_TUNE.id, 'gpt-4o'] }) });
    assert.equal(access.status, 200, await access.text());
    const cap = await fetch(`${gw.url}/api/v1/spend_cap/update`, { method: 'POST', headers: auth, body: JSON.stringify({ cap_usd: 10, period: 'day' }) });
    assert.equal(cap.status, 200);
    const client = new OpenAI({ apiKey: devKey, baseURL: `${gw.url}/v1`, defaultHeaders: { 'x-gw-provider-key': 'sk-upstream' }, maxRetries: 0 });
    await client.chat.completions.create({ model: FINE_TUNE.id, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
    const want = Math.round(costUsd(FINE_TUNE.id, USAGE, 'openai') * 1e9) / 1e9;
    let consumed = 0;
    for (let i = 0; i < 100 && consumed === 0; i++) {
      const res = await fetch(`${gw.url}/api/v1/settings`, { headers: auth });
      consumed = ((await res.json()) as { spend_cap: { consumed_usd: number } }).spend_cap.consumed_usd;
      if (consumed === 0) await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(consumed, want);
  });
});
