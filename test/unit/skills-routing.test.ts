import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CATALOG, lookupModel } from '../../src/providers/catalog.js';
import { evaluateModelRouting } from '../../src/skills/routing/index.js';
import { ASSUMED_OUTPUT_TOKENS, SIMPLE } from '../../src/skills/routing/policy.js';
import type { StageContext } from '../../src/skills/stage.js';
import { NO_DEADLINE, PASSED, stageInput } from '../helpers/stage-input.js';

type J = Record<string, unknown>;
const route = (surface: string, body: unknown, context?: StageContext, acting = true) =>
  evaluateModelRouting(stageInput('model_routing', surface, body, acting, context), NO_DEADLINE);
const routed = (r: ReturnType<typeof route>) => (r.detail?.['route'] as { model: string; reason: string } | undefined)?.model;
const bodyOf = (r: ReturnType<typeof route>) => JSON.parse(Buffer.from(r.change!.body!).toString('utf8')) as J;

const ask = (content: unknown, extra: J = {}) => ({ model: 'auto', messages: [{ role: 'user', content }], ...extra });
const TOOLS = [{ type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: {} } } }];
const IMAGE = [
  { type: 'text', text: 'What is in this picture?' },
  { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
];

/** the cheapest catalog model with these capabilities for a short prompt, computed independently of the policy */
function cheapestWith(caps: string[], allowed?: (id: string, provider: string) => boolean): string {
  const usd = (id: string) => {
    const p = lookupModel(id)!.price;
    return p.input * 10 + p.output * ASSUMED_OUTPUT_TOKENS;
  };
  return CATALOG.filter((m) => caps.every((c) => (m.capabilities as string[]).includes(c)) && (allowed?.(m.id, m.provider) ?? true)).sort((a, b) => usd(a.id) - usd(b.id) || a.id.localeCompare(b.id))[0]!.id;
}

describe('a request that names no model', () => {
  test('chat-completions "auto": the cheapest allowed model, body rewritten', () => {
    const r = route('chat_completions', ask('Say hello.'), { allowedModels: ['gpt-4o', 'gpt-4o-mini', 'claude-sonnet-4-5'] });
    assert.equal(r.outcome, 'applied');
    assert.equal(routed(r), 'gpt-4o-mini');
    assert.equal(r.change?.model, 'gpt-4o-mini');
    assert.equal(bodyOf(r)['model'], 'gpt-4o-mini');
    assert.match((r.detail!['route'] as J)['reason'] as string, /no model named: cheapest allowed model with chat/);
  });

  test('the whole catalog when the context names no allowed models; reachable providers narrow it', () => {
    assert.equal(routed(route('chat_completions', ask('Say hello.'))), cheapestWith(['chat']));
    const r = route('chat_completions', ask('Say hello.'), { reachableProviders: ['msgvendor'] });
    assert.equal(routed(r), cheapestWith(['chat'], (_, p) => p === 'msgvendor'));
  });

  test('tools need a tools-capable model, images a vision one, reasoning a reasoning one', () => {
    const allowed = { allowedModels: ['meta.llama3-3-70b-instruct-v1:0', 'anthropic.claude-3-5-haiku-20241022-v1:0', 'gpt-4o'] };
    assert.equal(routed(route('chat_completions', ask('hi'), allowed)), 'meta.llama3-3-70b-instruct-v1:0');
    // llama has no tools
    assert.equal(routed(route('chat_completions', ask('weather?', { tools: TOOLS }), allowed)), 'anthropic.claude-3-5-haiku-20241022-v1:0');
    // a conversation that carries tool calls needs tools too, declared or not
    const carried = { model: 'auto', messages: [{ role: 'user', content: 'w?' }, { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'w', arguments: '{}' } }] }, { role: 'tool', tool_call_id: 'c', content: 'sun' }] };
    assert.equal(routed(route('chat_completions', carried, allowed)), 'anthropic.claude-3-5-haiku-20241022-v1:0');
    // the Bedrock haiku has no vision
    assert.equal(routed(route('chat_completions', ask(IMAGE), allowed)), 'gpt-4o');
    const reasoning = { allowedModels: ['gpt-4o-mini', 'o3'] };
    assert.equal(routed(route('chat_completions', ask('prove it'), reasoning)), 'gpt-4o-mini');
    const r = route('chat_completions', ask('prove it', { reasoning_effort: 'high' }), reasoning);
    assert.equal(routed(r), 'o3');
    assert.deepEqual(r.detail!['needs'], ['chat', 'reasoning']);
  });

  test('a prompt larger than a model\'s context window rules it out', () => {
    const long = 'lorem ipsum dolor sit amet '.repeat(30_000); // ~150k tokens
    const r = route('chat_completions', ask(long), { allowedModels: ['gpt-4o-mini', 'gpt-4.1-mini'] });
    assert.equal(routed(r), 'gpt-4.1-mini');
    assert.ok((r.detail!['prompt_tokens'] as number) > 128_000);
  });

  test('/v1/execute without target.model: target.model is set; a pinned provider is kept', () => {
    const body = { input: { messages: [{ role: 'user', content: 'hi' }] }, target: { provider: 'msgvendor' } };
    const r = route('execute', body);
    assert.equal(routed(r), cheapestWith(['chat'], (_, p) => p === 'msgvendor'));
    assert.deepEqual(bodyOf(r)['target'], { provider: 'msgvendor', model: routed(r) });
    assert.equal(routed(route('execute', { input: { messages: [{ role: 'user', content: 'hi' }] } }, { allowedModels: ['gpt-4o'] })), 'gpt-4o');
  });

  test('a tool schema naming an image is not an image in the conversation', () => {
    const tools = [{ type: 'function', function: { name: 'upload', parameters: { type: 'object', properties: { image: { type: 'object' } } } } }];
    const r = route('execute', { input: { messages: [{ role: 'user', content: 'hi' }], tools } });
    assert.deepEqual(r.detail!['needs'], ['chat', 'tools']);
  });

  test('no allowed model has what the request needs: skipped, saying why', () => {
    const r = route('chat_completions', ask(IMAGE), { allowedModels: ['meta.llama3-3-70b-instruct-v1:0'] });
    assert.equal(r.outcome, 'skipped');
    assert.match(r.detail!['reason'] as string, /no allowed, reachable model has chat\+vision/);
  });
});

describe('a named model routed down', () => {
  test('a simple request goes to the cheapest model of the same provider; the detail says from and why', () => {
    const r = route('chat_completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'Capital of France?' }] });
    assert.equal(r.outcome, 'applied');
    assert.equal(routed(r), cheapestWith(['chat'], (_, p) => p === 'openai'));
    assert.equal(r.detail!['from'], 'gpt-4o');
    assert.ok((r.detail!['usd_saved'] as number) > 0);
    assert.match((r.detail!['route'] as J)['reason'] as string, /simple request .*gpt-4o routed down to the cheapest openai model/);
  });

  test('the org\'s allowed models bound the choice; no cheaper allowed model leaves it', () => {
    const r = route('messages', { model: 'claude-opus-4-1', max_tokens: 200, messages: [{ role: 'user', content: 'hi' }] }, { allowedModels: ['claude-opus-4-1', 'claude-haiku-4-5'] });
    assert.equal(routed(r), 'claude-haiku-4-5');
    assert.equal(bodyOf(r)['model'], 'claude-haiku-4-5');
    const none = route('messages', { model: 'claude-haiku-4-5', max_tokens: 200, messages: [{ role: 'user', content: 'hi' }] }, { allowedModels: ['claude-opus-4-1', 'claude-haiku-4-5'] });
    assert.equal(none.outcome, 'skipped');
  });

  test('Responses keeps to models that serve the Responses API', () => {
    const r = route('responses', { model: 'gpt-5', input: 'hi' });
    assert.ok(lookupModel(routed(r))!.capabilities.includes('responses'));
  });

  test('generate-content and converse name the model in the URL: the context carries it, the change names the model only', () => {
    const r = route('generate_content', { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }, { model: 'gemini-2.5-pro' });
    assert.equal(r.change?.model, cheapestWith(['chat'], (_, p) => p === 'genvendor'));
    assert.equal(r.change?.body, undefined);
  });

  const complex: Array<[string, J]> = [
    ['uses tools', { tools: TOOLS }],
    ['has images', { messages: [{ role: 'user', content: IMAGE }] }],
    ['asks for reasoning', { reasoning_effort: 'low' }],
    ['asks for structured output', { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } } }],
    [`output budget 4096 > ${SIMPLE.maxOutputTokens}`, { max_tokens: 4096 }],
    [
      `4 user turns > ${SIMPLE.maxUserTurns}`,
      { messages: ['a', 'b', 'c', 'd'].flatMap((t) => [{ role: 'user', content: t }, { role: 'assistant', content: 'ok' }]) },
    ],
    ['prompt of', { messages: [{ role: 'user', content: 'word '.repeat(SIMPLE.maxPromptTokens + 10) }] }],
  ];
  for (const [why, extra] of complex) {
    test(`not simple (${why}): the named model stays`, () => {
      const r = route('chat_completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], ...extra });
      assert.equal(r.outcome, 'skipped');
      assert.equal(r.change, undefined);
      assert.ok((r.detail!['reason'] as string).startsWith(`not simple: ${why}`), r.detail!['reason'] as string);
    });
  }

  test('in shadow the detail says what it would have done, as when acting', () => {
    const body = { model: 'gpt-4o', messages: [{ role: 'user', content: 'Capital of France?' }] };
    const acting = route('chat_completions', body);
    const shadow = route('chat_completions', body, undefined, false);
    assert.deepEqual(shadow.detail, acting.detail);
    assert.equal(routed(shadow), routed(acting));
  });

  test('a model the catalog does not know, or a past deadline, routes nothing', () => {
    assert.match(route('chat_completions', { model: 'my-finetune', messages: [{ role: 'user', content: 'hi' }] }).detail!['reason'] as string, /not in the catalog/);
    assert.equal(evaluateModelRouting(stageInput('model_routing', 'chat_completions', ask('hi')), PASSED).outcome, 'ceiling_exceeded');
  });
});
