import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFakeAnthropic } from '../fakes/anthropic.js';
import { startFakeAzure } from '../fakes/azure.js';
import { startFakeBedrock } from '../fakes/bedrock.js';
import { startFakeGemini } from '../fakes/gemini.js';
import type { FakeVendor } from '../fakes/server.js';
import { call, type Answer } from '../helpers/api.js';
import { oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const { bootstrap, devKey } = oneTenant('scoped');
interface Fakes {
  openai: FakeVendor;
  anthropic: FakeVendor;
  gemini: FakeVendor;
  bedrock: FakeVendor;
}

/** per provider family: the fake that serves it, the one model enabled, and a sibling that is not */
type Family = { vendor: keyof Fakes; enabled: string; refused: string };
const OPENAI: Family = { vendor: 'openai', enabled: 'gpt-4o-mini', refused: 'gpt-4o' };
const MSGVENDOR: Family = { vendor: 'anthropic', enabled: 'claude-haiku-4-5', refused: 'claude-sonnet-4-5' };
const GENVENDOR: Family = { vendor: 'gemini', enabled: 'gemini-2.5-flash', refused: 'gemini-2.5-pro' };
const CLOUDY: Family = { vendor: 'bedrock', enabled: 'anthropic.claude-3-5-haiku-20241022-v1:0', refused: 'anthropic.claude-sonnet-4-5-20250929-v1:0' };
const ENABLED = [OPENAI, MSGVENDOR, GENVENDOR, CLOUDY].map((f) => f.enabled);

/** Every surface that names a model, each called the way its vendor's clients call it. */
const SURFACES: Array<Family & { name: string; send(gw: TestGateway, model: string): Promise<Answer> }> = [
  {
    name: 'chat-completions',
    ...OPENAI,
    send: (gw, model) => call(gw, '/v1/chat/completions', { key: devKey, headers: { 'x-gw-provider-key': 'sk-vendor' }, body: { model, messages: [{ role: 'user', content: 'hi' }] } }),
  },
  {
    name: 'responses',
    ...OPENAI,
    send: (gw, model) => call(gw, '/v1/responses', { key: devKey, headers: { 'x-gw-provider-key': 'sk-vendor' }, body: { model, input: 'hi' } }),
  },
  {
    name: 'cloudx deployment chat',
    ...OPENAI,
    send: (gw, deployment) =>
      call(gw, `/cloudx/compat/openai/deployments/${deployment}/chat/completions?api-version=2024-10-21`, {
        headers: { 'api-key': devKey, 'x-gw-provider-key': 'azure-resource-key' },
        body: { messages: [{ role: 'user', content: 'hi' }] },
      }),
  },
  {
    name: 'messages',
    ...MSGVENDOR,
    send: (gw, model) =>
      call(gw, '/msgvendor/v1/messages', {
        headers: { 'x-api-key': devKey, 'x-gw-provider-key': 'sk-ant-vendor', 'anthropic-version': '2023-06-01' },
        body: { model, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
      }),
  },
  {
    name: 'count_tokens',
    ...MSGVENDOR,
    send: (gw, model) =>
      call(gw, '/msgvendor/v1/messages/count_tokens', {
        headers: { 'x-api-key': devKey, 'x-gw-provider-key': 'sk-ant-vendor', 'anthropic-version': '2023-06-01' },
        body: { model, messages: [{ role: 'user', content: 'hi' }] },
      }),
  },
  {
    name: 'generate-content',
    ...GENVENDOR,
    send: (gw, model) =>
      call(gw, `/genvendor/v1beta/models/${model}:generateContent`, {
        headers: { 'x-goog-api-key': devKey, 'x-gw-provider-key': 'gemini-vendor-key' },
        body: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] },
      }),
  },
  {
    name: 'converse, model in the path',
    ...CLOUDY,
    send: (gw, model) =>
      call(gw, `/cloudy/model/${encodeURIComponent(model)}/converse`, {
        headers: { 'x-gw-key': devKey, authorization: 'Bearer bedrock-api-key' },
        body: { messages: [{ role: 'user', content: [{ text: 'hi' }] }] },
      }),
  },
  {
    name: 'converse, model in the body',
    ...CLOUDY,
    send: (gw, modelId) =>
      call(gw, '/cloudy/converse', {
        headers: { 'x-gw-key': devKey, authorization: 'Bearer bedrock-api-key' },
        body: { modelId, messages: [{ role: 'user', content: [{ text: 'hi' }] }] },
      }),
  },
];

for (const redis of [false, true]) {
  describe(`model access on every surface that names a model (${redis ? 'redis' : 'embedded'} store)`, () => {
    let fakes: Fakes;
    let gw: TestGateway;
    before(async () => {
      const [openai, anthropic, gemini, bedrock] = await Promise.all([startFakeAzure(), startFakeAnthropic(), startFakeGemini(), startFakeBedrock()]);
      fakes = { openai, anthropic, gemini, bedrock };
      gw = await startTestGateway({
        redis,
        bootstrap,
        env: {
          // the fake Azure resource also answers OpenAI's own /v1/chat/completions and /v1/responses
          GW_UPSTREAM_OPENAI: openai.origin,
          GW_UPSTREAM_CLOUDX: openai.origin,
          GW_UPSTREAM_MSGVENDOR: anthropic.origin,
          GW_UPSTREAM_GENVENDOR: gemini.origin,
          GW_UPSTREAM_CLOUDY: bedrock.origin,
        },
      });
      const set = await call(gw, '/api/v1/model_access/update', { key: devKey, body: { models: ENABLED } });
      assert.equal(set.status, 200, JSON.stringify(set.json));
    });
    after(async () => {
      await gw.close();
      await Promise.all(Object.values(fakes).map((f) => f.close()));
    });

    for (const s of SURFACES) {
      it(`${s.name}: a model not enabled is 403 model_not_in_scope and nothing goes upstream; an enabled one is relayed`, async () => {
        const vendor = fakes[s.vendor];
        const before = vendor.received.length;
        const refused = await s.send(gw, s.refused);
        assert.equal(refused.status, 403, JSON.stringify(refused.json));
        assert.equal(refused.headers.get('x-gw-error'), 'model_not_in_scope');
        assert.match(JSON.stringify(refused.json), new RegExp(s.refused.replace(/[.]/g, '\\.')));
        assert.equal(vendor.received.length, before, 'nothing went upstream');
        const served = await s.send(gw, s.enabled);
        assert.equal(served.status, 200, JSON.stringify(served.json));
        assert.equal(vendor.received.length, before + 1);
      });
    }
  });
}
