import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { destinationModels, DestinationsFileError, readDestinationsFile } from '../../src/destinations/file.js';
import { GatewayError } from '../../src/errors.js';
import { account } from '../../src/pipeline/accounting.js';
import type { RelayOutcome } from '../../src/pipeline/relay.js';
import { converseEnvelope, generateContentEnvelope, messagesEnvelope, nativeEnvelope, responsesEnvelope, sharedEnvelope } from '../../src/surfaces/envelopes.js';
import { StageClock } from '../../src/http/stages.js';
import type { GatewayRequest } from '../../src/http/types.js';
import { createLogger } from '../../src/telemetry/log.js';
import { createMetrics } from '../../src/telemetry/metrics.js';
import { InspectorRing } from '../../src/telemetry/ring.js';
import { TelemetryRows } from '../../src/telemetry/row-sink.js';
import type { Caller } from '../../src/tenancy/types.js';
import { scratchDir } from '../helpers/scratch.js';

async function fileOf(doc: unknown): Promise<string> {
  const file = join(scratchDir('gw-dest-unit-'), 'd.json');
  await writeFile(file, JSON.stringify(doc));
  return file;
}

const good = { id: 'gpu1', provider: 'selfhosted', origin: 'http://10.0.0.5:8000', models: ['llama'], adapter_memory_mb: 100, adapters: { sql: { base_model: 'llama', path: '/a/sql', size_mb: 10 } } };

describe('the destinations file', () => {
  it('names every bad entry', async () => {
    const file = await fileOf([
      good,
      { ...good, id: 'bad-origin', origin: 'ftp://x' },
      { ...good, id: 'no-models', models: [] },
      { ...good, id: 'vendor', provider: 'openai' },
      { id: 'gpu9', provider: 'selfhosted', origin: 'http://h:1', models: ['m'], extra: 1 },
    ]);
    assert.throws(
      () => readDestinationsFile(file),
      (err: unknown) => {
        assert.ok(err instanceof DestinationsFileError);
        for (const name of ['entry 1 ("bad-origin"): origin', 'entry 2 ("no-models"): models', 'entry 3 ("vendor"): provider', 'entry 4 ("gpu9"): extra']) {
          assert.ok(err.problems.some((p) => p.startsWith(name)), `${name} in ${err.problems.join(' | ')}`);
        }
        assert.ok(!err.problems.some((p) => p.startsWith('entry 0')));
        return true;
      },
    );
  });

  it('names duplicate ids and adapters on a base model the destination does not hold', async () => {
    const file = await fileOf([good, { ...good, adapters: { q: { base_model: 'other', path: '/q', size_mb: 1 } } }]);
    assert.throws(() => readDestinationsFile(file), /entry 1 \("gpu1"\): id: another entry[\s\S]*adapters\.q\.base_model/);
  });

  it('accepts an adapter larger than its destination adapter memory (calls naming it are 507)', async () => {
    const file = await fileOf([{ ...good, adapters: { huge: { base_model: 'llama', path: '/h', size_mb: 1000 } } }]);
    assert.equal(readDestinationsFile(file).length, 1);
  });

  it('puts base models and adapters in the catalog as selfhosted at the highest price any destination sets', () => {
    const models = destinationModels([
      { ...good, provider: 'selfhosted', price: { input: 1, output: 2 } },
      { ...good, id: 'gpu2', provider: 'selfhosted', price: { input: 3, output: 1 } },
    ]);
    const llama = models.find((m) => m.id === 'llama');
    const sql = models.find((m) => m.id === 'sql');
    assert.equal(llama?.provider, 'selfhosted');
    assert.deepEqual([llama?.price.input, llama?.price.output], [3, 2]);
    assert.equal(sql?.base_model, 'llama');
    assert.equal(models.length, 2);
  });
});

describe('the row of a self-hosted call', () => {
  it('names destination_id and model_serving_route and is priced at the destination', () => {
    const ring = new InspectorRing(4);
    const outcome: RelayOutcome = { status: 200, usage: { input_tokens: 1000, output_tokens: 500, cached_tokens: 0 }, upstreamMs: 1, overheadMs: 0, dispatched: true, streamed: false };
    const caller = { org: { org_id: 'acme' }, key: { key_id: 'key_x' } } as unknown as Caller;
    const cost = account(new TelemetryRows(ring, undefined, createMetrics(), createLogger('silent')), {
      requestId: 'r1',
      endpoint: 'chat_completions',
      provider: 'selfhosted',
      model: 'sql',
      caller,
      destination: { destination_id: 'gpu1', model_serving_route: 'selfhosted:gpu1/sql', price: { input: 2, output: 4 } },
      outcome,
      latencyMs: 3,
      requestBody: Buffer.alloc(0),
      req: { id: 'r1', headers: {}, body: Buffer.alloc(0), stages: new StageClock() } as unknown as GatewayRequest,
      answer: {},
      failOpenReason: undefined,
      credentialSource: undefined,
    });
    const row = ring.find('acme', 'r1')?.row;
    assert.equal(row?.destination_id, 'gpu1');
    assert.equal(row?.model_serving_route, 'selfhosted:gpu1/sql');
    assert.equal(cost, (1000 * 2 + 500 * 4) / 1e6);
  });
});

describe('507 adapter_unavailable', () => {
  it("renders in every surface's envelope with its status", () => {
    const err = new GatewayError('adapter_unavailable', 'adapter too large');
    assert.equal(err.carriesHeader, true);
    for (const envelope of [sharedEnvelope, generateContentEnvelope, converseEnvelope, messagesEnvelope, responsesEnvelope, nativeEnvelope]) {
      const r = envelope.renderError(err);
      assert.equal(r.status, 507);
      assert.match(r.body, /adapter_unavailable/);
    }
  });

  it('a dispatch-side overloaded carries no x-gw-error; the others do', () => {
    assert.equal(new GatewayError('overloaded', 'full', { summary: true }).carriesHeader, false);
    assert.equal(new GatewayError('overloaded', 'shed').carriesHeader, true);
  });
});
