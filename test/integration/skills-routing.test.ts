import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startEchoVendor, type EchoVendor } from '../fakes/echo.js';
import { startTestGateway, tenants, type TestGateway } from '../helpers/gateway.js';
import { BEDROCK_MODEL, callHeld, callSurface, durableRow, echoEnv, metricValue, SKILL_SURFACES, type SkillSurface } from '../helpers/skill-surfaces.js';

/**
 * model_routing through the real gateway and its pool threads, every
 * upstream an echo vendor: a simple request naming a model goes to the
 * cheapest allowed model of the same provider on every surface that names
 * one (the body's model, or the path's for generate-content and converse,
 * planned again); a request naming none gets one chosen, at another provider
 * when that one is cheapest and reachable (its stored key, never the key the
 * caller passed for the provider it named); shadow changes nothing.
 */

const HAIKU_35 = 'anthropic.claude-3-5-haiku-20241022-v1:0';
const ALLOWED = ['gpt-4o', 'gpt-4o-mini', 'claude-sonnet-4-5', 'claude-haiku-4-5', 'gemini-2.5-pro', 'gemini-2.5-flash', BEDROCK_MODEL, HAIKU_35];
const PROD = { 'x-gw-skills': 'model_routing=prod' };

/** Each surface that names a model, the dearer model a simple request names, and the model the upstream call must name instead. */
const ROUTED_DOWN: Array<{ surface: string; name?: string; from: string; to: string; upstreamModel: (url: string, body: Record<string, unknown>) => unknown }> = [
  { surface: 'chat_completions', from: 'gpt-4o', to: 'gpt-4o-mini', upstreamModel: (_u, b) => b['model'] },
  { surface: 'chat_completions', name: 'chat-completions translated to messages', from: 'claude-sonnet-4-5', to: 'claude-haiku-4-5', upstreamModel: (_u, b) => b['model'] },
  { surface: 'responses', from: 'gpt-4o', to: 'gpt-4o-mini', upstreamModel: (_u, b) => b['model'] },
  { surface: 'messages', from: 'claude-sonnet-4-5', to: 'claude-haiku-4-5', upstreamModel: (_u, b) => b['model'] },
  { surface: 'generate_content', from: 'gemini-2.5-pro', to: 'gemini-2.5-flash', upstreamModel: (u) => /\/models\/([^:]+):/.exec(u)?.[1] },
  { surface: 'converse', from: BEDROCK_MODEL, to: HAIKU_35, upstreamModel: (u) => decodeURIComponent(/^\/model\/([^/]+)\//.exec(u)?.[1] ?? '') },
  { surface: 'execute', from: 'gpt-4o', to: 'gpt-4o-mini', upstreamModel: (_u, b) => b['model'] },
];

const caseOf = (surface: string, name?: string): SkillSurface => SKILL_SURFACES.find((s) => s.surface === surface && (name === undefined || s.name === name)) as SkillSurface;

describe('model_routing on every surface that names a model', () => {
  let echo: EchoVendor;
  let gw: TestGateway;
  const { bootstrap, keys } = tenants('routing-org', 'routing-auto');
  const devKey = keys['routing-org'] as string;
  /** an org that may call gpt-4o and claude-haiku-4-5 only */
  const autoKey = keys['routing-auto'] as string;
  const auth = { authorization: `Bearer ${devKey}`, 'content-type': 'application/json' };
  const autoAuth = { authorization: `Bearer ${autoKey}`, 'content-type': 'application/json' };

  before(async () => {
    echo = await startEchoVendor();
    gw = await startTestGateway({ bootstrap, redis: true, env: echoEnv(echo) });
    for (const [headers, models] of [
      [auth, ALLOWED],
      [autoAuth, ['gpt-4o', 'claude-haiku-4-5']],
    ] as const) {
      const access = await fetch(`${gw.url}/api/v1/model_access/update`, { method: 'POST', headers, body: JSON.stringify({ models }) });
      assert.equal(access.status, 200, await access.text());
    }
  });
  after(async () => {
    await gw.close();
    await echo.close();
  });

  for (const c of ROUTED_DOWN) {
    const s = caseOf(c.surface, c.name);
    for (const stream of [false, true]) {
      it(`${s.name}, ${stream ? 'streamed' : 'whole'}: a simple request naming ${c.from} goes to ${c.to}, named in x-gw-routed-model`, async () => {
        const r = await callSurface(gw, echo, s, devKey, 'What is the capital of France?', { stream, model: c.from, headers: PROD });
        assert.equal(r.status, 200, r.bytes.toString());
        assert.equal(r.headers.get('x-gw-skill-model-routing'), 'applied');
        assert.equal(r.headers.get('x-gw-routed-model'), c.to);
        assert.equal(r.upstream.length, 1);
        const up = r.upstream[0]!;
        assert.equal(c.upstreamModel(up.url, JSON.parse(up.body.toString()) as Record<string, unknown>), c.to);
        assert.equal(r.text, 'What is the capital of France?');
      });
    }
  }

  it("the row's decision names the model asked for, the model routed to and the reason; the metric counts it", async () => {
    const s = caseOf('chat_completions', 'chat-completions');
    const routed = await metricValue(gw, 'gw_skill_routed_total{model="gpt-4o-mini"}');
    await callSurface(gw, echo, s, devKey, 'What is the capital of Italy?', { headers: { ...PROD, 'x-request-id': 'route-row' } });
    const row = await durableRow<{ request: { model: string }; decision: { route: Record<string, unknown> } }>(gw, devKey, 'route-row');
    assert.equal(row?.request.model, 'gpt-4o-mini');
    assert.equal(row?.decision.route['model'], 'gpt-4o');
    assert.equal(row?.decision.route['routed_model'], 'gpt-4o-mini');
    assert.match(String(row?.decision.route['reason']), /simple request/);
    assert.equal(await metricValue(gw, 'gw_skill_routed_total{model="gpt-4o-mini"}'), routed + 1);
  });

  it('a request that is not simple keeps its model (tools declared)', async () => {
    const s = caseOf('chat_completions', 'chat-completions');
    const body = JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }] });
    const n = echo.received.length;
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { ...s.headers(devKey), 'content-type': 'application/json', ...PROD }, body });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gw-skill-model-routing'), 'skipped');
    assert.equal(res.headers.get('x-gw-routed-model'), null);
    assert.equal(JSON.parse(echo.received[n]!.body.toString()).model, 'gpt-4o');
  });

  it('shadow records the decision and sends the named model', async () => {
    const s = caseOf('chat_completions', 'chat-completions');
    const r = await callHeld(gw, echo, s, devKey, 'What is the capital of Spain?', 'gw_skill_run_seconds_count{stage="model_routing"}', { headers: { 'x-gw-skills': 'model_routing=shadow', 'x-request-id': 'route-shadow' } });
    assert.equal(r.headers.get('x-gw-skill-model-routing'), 'shadow');
    assert.equal(r.headers.get('x-gw-routed-model'), null);
    assert.equal(JSON.parse(r.upstream[0]!.body.toString()).model, 'gpt-4o');
    const row = await durableRow<{ request: { skills: Record<string, { detail?: Record<string, unknown> }> } }>(gw, devKey, 'route-shadow');
    assert.equal(row?.request.skills['model_routing']?.detail?.['decision'], 'applied');
  });

  it('chat-completions model "auto": the cheapest allowed, reachable model, at the provider of a stored key, not with the key passed for OpenAI', async () => {
    const s = caseOf('chat_completions', 'chat-completions');
    // without a msgvendor key the cheaper claude-haiku-4-5 is unreachable: gpt-4o, with the key passed through
    const openai = await callSurface(gw, echo, s, autoKey, 'Say hello.', { model: 'auto', headers: PROD });
    assert.equal(openai.headers.get('x-gw-routed-model'), 'gpt-4o');
    assert.equal(openai.upstream[0]?.headers['authorization'], 'Bearer sk-upstream');
    const stored = await fetch(`${gw.url}/api/v1/vendor_key/create`, { method: 'POST', headers: autoAuth, body: JSON.stringify({ provider: 'msgvendor', api_key: 'sk-ant-stored-routing' }) });
    assert.equal(stored.status, 200, await stored.text());
    for (const stream of [false, true]) {
      const r = await callSurface(gw, echo, s, autoKey, 'Say hello.', { stream, model: 'auto', headers: PROD });
      assert.equal(r.status, 200, r.bytes.toString());
      assert.equal(r.headers.get('x-gw-routed-model'), 'claude-haiku-4-5');
      const up = r.upstream[0]!;
      assert.equal(up.url, '/v1/messages', 'translated to the routed model vendor');
      assert.equal(JSON.parse(up.body.toString()).model, 'claude-haiku-4-5');
      assert.equal(up.headers['x-api-key'], 'sk-ant-stored-routing');
      assert.equal(r.text, 'Say hello.');
    }
  });

  it('chat-completions model "auto" with routing off is 402 onboarding_incomplete, nothing upstream', async () => {
    const s = caseOf('chat_completions', 'chat-completions');
    const r = await callSurface(gw, echo, s, devKey, 'Say hello.', { model: 'auto' });
    assert.equal(r.status, 402);
    assert.equal(r.headers.get('x-gw-error'), 'onboarding_incomplete');
    assert.equal(r.upstream.length, 0);
  });

  it('/v1/execute without target.model: routing chooses one (trace.route gives model and reason); with routing off, 402', async () => {
    const body = JSON.stringify({ input: { messages: [{ role: 'user', content: 'Say hello.' }] }, target: { provider: 'openai' } });
    const headers = { ...auth, 'x-gw-provider-key': 'sk-upstream' };
    const n = echo.received.length;
    const routed = await fetch(`${gw.url}/v1/execute`, { method: 'POST', headers: { ...headers, ...PROD }, body });
    const reply = (await routed.json()) as { model: string; trace: { route: { model: string; reason: string } } };
    assert.equal(routed.status, 200, JSON.stringify(reply));
    assert.equal(reply.model, 'gpt-4o-mini');
    assert.equal(reply.trace.route.model, 'gpt-4o-mini');
    assert.match(reply.trace.route.reason, /no model named/);
    assert.equal(JSON.parse(echo.received[n]!.body.toString()).model, 'gpt-4o-mini');
    const off = await fetch(`${gw.url}/v1/execute`, { method: 'POST', headers, body });
    assert.equal(off.status, 402);
    assert.equal(echo.received.length, n + 1, 'nothing upstream');
  });
});
