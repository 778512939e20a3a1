import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startFakeAnthropic, TEXT, THINKING, TOOL_USE } from '../fakes/anthropic.js';
import { BEDROCK_TOOL_USE, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.js';
import { GEMINI_CALL, startFakeGemini } from '../fakes/gemini.js';
import { startFakeOpenAI } from '../fakes/openai.js';
import type { FakeVendor, Recorded } from '../fakes/server.js';
import { ARMS } from '../../src/lifecycle/samples.js';
import type { ProcessRowWindow } from '../../src/lifecycle/sources.js';
import { call, type Answer } from '../helpers/api.js';
import { devKeySecret, oneTenant, SECRETS_KEY, startTestGateway, type Bootstrap, type TestGateway } from '../helpers/gateway.js';
import { scratchDir } from '../helpers/scratch.js';

const PER_KEY_SKILLS = ['semantic_cache', 'prompt_compaction', 'pii_redaction', 'model_routing', 'agent_trajectory_compaction'];
const TOOLS = [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
const HELLO = { messages: [{ role: 'user', content: 'Say hello.' }] };

// the assertions walk reply JSON by known paths; a wrong path fails the assertion it feeds
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;
/** an answer whose JSON the assertions walk freely */
type Reply = Omit<Answer, 'json'> & { json: Json };
const ask = async (gw: TestGateway, path: string, init: Parameters<typeof call>[2]): Promise<Reply> => (await call(gw, path, init)) as Reply;

interface SseEvent {
  event: string;
  data: Json;
}

/** The typed stream's events, in order; a `data:` without an `event:` line would show as event ''. */
function events(text: string): SseEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7) ?? '';
      const data = lines.find((l) => l.startsWith('data: '))?.slice(6) ?? 'null';
      return { event, data: JSON.parse(data) as Json };
    });
}

const bodyOf = (r: Recorded | undefined): Json => {
  assert.ok(r, 'the fake received the call');
  return JSON.parse(r.body.toString('utf8')) as Json;
};

/** A loopback port nothing listens on: a connect there is refused. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((r) => probe.close(() => r()));
  return port;
}

describe('POST /v1/execute', () => {
  const { bootstrap, devKey } = oneTenant('acme-execute');
  let openai: FakeVendor;
  let anthropic: FakeVendor;
  let gemini: FakeVendor;
  let bedrock: FakeBedrock;
  let gw: TestGateway;

  before(async () => {
    [openai, anthropic, gemini, bedrock] = await Promise.all([startFakeOpenAI(), startFakeAnthropic(), startFakeGemini(), startFakeBedrock()]);
    gw = await startTestGateway({
      bootstrap,
      env: { GW_UPSTREAM_OPENAI: openai.origin, GW_UPSTREAM_MSGVENDOR: anthropic.origin, GW_UPSTREAM_GENVENDOR: gemini.origin, GW_UPSTREAM_CLOUDY: bedrock.origin },
    });
  });
  after(async () => {
    await gw.close();
    await Promise.all([openai, anthropic, gemini, bedrock].map((f) => f.close()));
  });

  const execute = (body: unknown, headers: Record<string, string> = {}): Promise<Reply> =>
    ask(gw, '/v1/execute', { key: devKey, body, headers: { 'x-gw-provider-key': 'vendor-key-1', ...headers } });

  async function stream(body: Json, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; text: string; events: SseEvent[] }> {
    const res = await fetch(`${gw.url}/v1/execute`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${devKey}`, 'x-gw-provider-key': 'vendor-key-1', ...headers },
      body: JSON.stringify({ ...body, execution: { ...body['execution'], stream: true } }),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, events: events(text) };
  }

  /** the stream's deltas folded, and its terminal event */
  function fold(evs: SseEvent[]): { content: string; reasoning: string; tools: Map<number, Json>; last: SseEvent } {
    assert.equal(evs[0]?.event, 'execution.started');
    let content = '';
    let reasoning = '';
    const tools = new Map<number, Json>();
    for (const e of evs.slice(1, -1)) {
      assert.equal(e.event, 'output.delta');
      content += e.data['content'] ?? '';
      reasoning += e.data['reasoning'] ?? '';
      for (const t of e.data['tool_calls'] ?? []) {
        const acc = tools.get(t.index) ?? { arguments: '' };
        if (t.id) acc['id'] = t.id;
        if (t.name) acc['name'] = t.name;
        acc['arguments'] += t.arguments ?? '';
        tools.set(t.index, acc);
      }
    }
    return { content, reasoning, tools, last: evs[evs.length - 1] as SseEvent };
  }

  describe('openai', () => {
    it('relays the envelope as chat completions and answers the execution object with usage, cost and trace', async () => {
      const n = openai.received.length;
      const r = await execute({
        input: { messages: [{ role: 'system', content: 'Be brief.' }, ...HELLO.messages] },
        target: { model: 'gpt-4o-mini' },
        execution: { max_tokens: 50, temperature: 0.2, top_p: 0.9, stop: ['END'], reasoning: { effort: 'low' } },
        metadata: { session_id: 's-1', team: 'core' },
      }, { 'x-gw-skills': 'pii_redaction=shadow' });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      const sent = openai.received[n];
      assert.equal(sent?.url, '/v1/chat/completions');
      assert.equal(sent?.headers['authorization'], 'Bearer vendor-key-1');
      assert.equal(sent?.headers['x-gw-skills'], undefined, 'gateway headers never go upstream');
      assert.deepEqual(bodyOf(sent), {
        model: 'gpt-4o-mini',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Say hello.' },
        ],
        max_completion_tokens: 50,
        temperature: 0.2,
        top_p: 0.9,
        stop: ['END'],
        reasoning_effort: 'low',
      });
      const x = r.json as Json;
      assert.equal(x['id'], r.headers.get('x-gw-request-id'));
      assert.equal(x['object'], 'execution');
      assert.equal(typeof x['created'], 'number');
      assert.equal(x['model'], 'gpt-4o-mini');
      assert.equal(x['provider'], 'openai');
      assert.deepEqual(x['output'], { role: 'assistant', content: 'Hello from the fake.' });
      assert.equal(x['finish_reason'], 'stop');
      // 12 in (2 cached), 5 out at gpt-4o-mini's 0.15 / 0.075 / 0.6 per million
      assert.deepEqual(x['usage'], { tokens_in: 12, tokens_out: 5, tokens_cached: 2, cost_usd: (10 * 0.15 + 2 * 0.075 + 5 * 0.6) / 1e6 });
      assert.equal(r.headers.get('x-gw-served-by'), 'pipeline');
      assert.equal(r.headers.get('x-gw-error'), null);
    });

    it('traces every per-key skill and guardrails with its effective mode, and the engine report of each stage that ran', async () => {
      const r = await execute({ input: HELLO, target: { model: 'gpt-4o-mini' }, skill_overrides: { semantic_cache: 'prod' } }, { 'x-gw-skills': 'pii_redaction=shadow, semantic_cache=off' });
      assert.equal(r.status, 200);
      const trace = r.json['trace'] as Json;
      assert.equal(trace['served_by'], 'pipeline');
      assert.deepEqual(trace['route'], { model: 'gpt-4o-mini', reason: 'requested' });
      assert.equal(typeof trace['stages']['auth'], 'number');
      assert.equal(typeof trace['stages']['upstream_openai'], 'number');
      const skills = trace['skills'] as Json[];
      assert.deepEqual(
        skills.map((s) => s['skill']),
        [...PER_KEY_SKILLS, 'guardrails'],
      );
      const bySkill = new Map(skills.map((s) => [s['skill'], s]));
      // the body's skill_overrides wins over the header for a skill both name
      assert.equal(bySkill.get('semantic_cache')?.['mode'], 'prod');
      assert.equal(bySkill.get('pii_redaction')?.['mode'], 'shadow');
      assert.deepEqual(bySkill.get('model_routing'), { skill: 'model_routing', mode: 'off', arm: null, outcome: 'skipped', ms: 0, detail: null });
      // the cache acted and missed (nothing stored yet); pii_redaction in shadow ran before dispatch, as every shadow stage does on this route
      assert.equal(bySkill.get('semantic_cache')?.['outcome'], 'miss');
      assert.equal(bySkill.get('pii_redaction')?.['outcome'], 'shadow');
      // the guardrails ran on the prompt (the regex stage found nothing) and say so, with the classifier's score in shadow
      const guard = bySkill.get('guardrails') as Json;
      assert.equal(guard['mode'], 'on');
      assert.equal(guard['outcome'], 'miss');
      assert.deepEqual(guard['detail']['detected'], []);
      assert.equal(typeof guard['ms'], 'number');
    });

    it('traces what every shadow skill would have done on a body over 1 KB too, however fast the vendor answers', async () => {
      const long = [{ role: 'user', content: 'Plan a relaxed four-day trip with short walks and plenty of breaks. '.repeat(40) }];
      const shadow = Object.fromEntries(PER_KEY_SKILLS.map((skill) => [skill, 'shadow']));
      for (let i = 0; i < 5; i++) {
        const r = await execute({ input: { messages: long }, target: { model: 'gpt-4o-mini' }, skill_overrides: shadow });
        assert.equal(r.status, 200);
        const skills = (r.json['trace'] as Json)['skills'] as Json[];
        for (const s of skills.filter((x) => x['skill'] !== 'guardrails')) {
          assert.deepEqual([s['skill'], s['mode'], s['arm'], s['outcome']], [s['skill'], 'shadow', 'shadow', 'shadow'], `request ${i}`);
          assert.equal(typeof s['detail']['decision'], 'string', `${String(s['skill'])}: what it would have done`);
        }
        const guard = skills.find((x) => x['skill'] === 'guardrails') as Json;
        assert.equal(guard['detail']['classifier']['outcome'], 'shadow', `request ${i}: the classifier's score`);
      }
    });

    it("traces an acting skill's own report: its mode, arm and outcome", async () => {
      const r = await execute({ input: HELLO, target: { model: 'gpt-4o-mini' }, skill_overrides: { prompt_compaction: 'prod' } });
      assert.equal(r.status, 200);
      const skills = (r.json['trace'] as Json)['skills'] as Json[];
      const compaction = skills.find((s) => s['skill'] === 'prompt_compaction') as Json;
      assert.equal(compaction['mode'], 'prod');
      assert.equal(compaction['arm'], 'treatment');
      assert.ok(['applied', 'skipped'].includes(compaction['outcome']), String(compaction['outcome']));
    });



    it('streams typed events: started, deltas, completed with the whole reply; no [DONE]', async () => {
      const n = openai.received.length;
      const s = await stream({ input: HELLO, target: { model: 'gpt-4o-mini' } });
      assert.equal(s.status, 200);
      assert.match(String(s.headers.get('content-type')), /^text\/event-stream/);
      assert.deepEqual(bodyOf(openai.received[n])['stream_options'], { include_usage: true });
      assert.ok(!s.text.includes('[DONE]'));
      const id = s.headers.get('x-gw-request-id');
      assert.deepEqual(s.events[0]?.data, { id, model: 'gpt-4o-mini', provider: 'openai' });
      const { content, last } = fold(s.events);
      assert.equal(content, 'Hello from the fake.');
      assert.equal(last.event, 'execution.completed');
      assert.equal(last.data['id'], id);
      assert.equal(last.data['object'], 'execution');
      assert.deepEqual(last.data['output'], { role: 'assistant', content: 'Hello from the fake.' });
      assert.equal(last.data['finish_reason'], 'stop');
      assert.equal(last.data['usage']['tokens_in'], 12);
      assert.equal(last.data['usage']['tokens_out'], 4);
      assert.equal(last.data['trace']['skills'].length, PER_KEY_SKILLS.length + 1);
    });

    it('ends a stream the vendor cuts with an error event, never a completion', async () => {
      const s = await stream({ input: HELLO, target: { model: 'break_stream' } });
      assert.equal(s.status, 200);
      const last = s.events[s.events.length - 1];
      assert.equal(last?.event, 'error');
      assert.deepEqual(Object.keys(last?.data['error']).sort(), ['code', 'message', 'type']);
      assert.ok(!s.events.some((e) => e.event === 'execution.completed'));
    });

    it("relays a vendor error with the vendor's status, type and message in the shared envelope, without x-gw-error", async () => {
      const r = await execute({ input: HELLO, target: { model: 'error_429' } });
      assert.equal(r.status, 429);
      assert.deepEqual(r.json, { error: { message: 'scripted 429', type: 'rate_limit_exceeded', code: 429 } });
      assert.equal(r.headers.get('x-gw-error'), null);
    });
  });

  describe('msgvendor (translated)', () => {
    it('answers the execution object, with reasoning when thinking is asked for', async () => {
      const n = anthropic.received.length;
      const r = await execute({ input: HELLO, target: { model: 'claude-sonnet-4-5' }, execution: { max_tokens: 8000, reasoning: { effort: 'low' } } });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      const sent = bodyOf(anthropic.received[n]);
      assert.equal(sent['model'], 'claude-sonnet-4-5');
      assert.equal(sent['thinking']['type'], 'enabled');
      assert.equal(r.json['provider'], 'msgvendor');
      assert.deepEqual(r.json['output'], { role: 'assistant', content: TEXT, reasoning: THINKING });
      // 21 fresh + 4 cache reads in, 9 out at 3 / 0.3 / 15 per million
      assert.deepEqual(r.json['usage'], { tokens_in: 25, tokens_out: 9, tokens_cached: 4, cost_usd: (21 * 3 + 4 * 0.3 + 9 * 15) / 1e6 });
    });

    it('streams reasoning and content deltas', async () => {
      const s = await stream({ input: HELLO, target: { model: 'claude-sonnet-4-5' }, execution: { max_tokens: 8000, reasoning: { effort: 'low' } } });
      const { content, reasoning, last } = fold(s.events);
      assert.equal(content, TEXT);
      assert.equal(reasoning, THINKING);
      assert.equal(last.event, 'execution.completed');
      assert.deepEqual(last.data['output'], { role: 'assistant', content: TEXT, reasoning: THINKING });
      assert.equal(last.data['usage']['tokens_out'], 9);
    });

    it('takes tools in and answers tool calls, whole and streamed', async () => {
      const n = anthropic.received.length;
      const body = { input: { ...HELLO, tools: TOOLS, tool_choice: 'required' }, target: { model: 'claude-sonnet-4-5-tool_use' } };
      const r = await execute(body);
      assert.equal(r.status, 200);
      const sent = bodyOf(anthropic.received[n]);
      assert.deepEqual(sent['tools'], [{ name: 'get_weather', description: 'Weather of a city', input_schema: TOOLS[0]?.function.parameters }]);
      assert.deepEqual(sent['tool_choice'], { type: 'any' });
      assert.equal(r.json['finish_reason'], 'tool_calls');
      const expected = { id: TOOL_USE.id, type: 'function', function: { name: 'get_weather', arguments: JSON.stringify(TOOL_USE.input) } };
      assert.deepEqual(r.json['output']['tool_calls'], [expected]);
      const s = await stream(body);
      const { tools, last } = fold(s.events);
      assert.deepEqual(tools.get(0), { id: TOOL_USE.id, name: 'get_weather', arguments: JSON.stringify(TOOL_USE.input) });
      assert.deepEqual(last.data['output']['tool_calls'], [expected]);
    });

    it('sends a tool result turn back as the vendor takes it', async () => {
      const n = anthropic.received.length;
      const messages = [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '18 C' },
      ];
      const r = await execute({ input: { messages, tools: TOOLS }, target: { model: 'claude-sonnet-4-5' } });
      assert.equal(r.status, 200);
      const sent = bodyOf(anthropic.received[n]);
      assert.deepEqual(sent['messages'][1], { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } }] });
      assert.deepEqual(sent['messages'][2], { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: '18 C' }] });
    });

    it("relays Anthropic's error type", async () => {
      const r = await execute({ input: HELLO, target: { model: 'claude-sonnet-4-5-error_529' } });
      assert.equal(r.status, 529);
      assert.equal(r.json['error']['code'], 529);
      assert.equal(typeof r.json['error']['type'], 'string');
      assert.notEqual(r.json['error']['type'], 'api_error', "the vendor's own type, not a gateway default");
      assert.equal(r.headers.get('x-gw-error'), null);
    });
  });

  describe('genvendor (translated)', () => {
    it('answers content and the thought parts as reasoning, whole and streamed', async () => {
      const r = await execute({ input: HELLO, target: { model: 'gemini-2.5-flash' } });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      assert.equal(r.json['provider'], 'genvendor');
      assert.deepEqual(r.json['output'], { role: 'assistant', content: 'Hello from the fake.', reasoning: 'Weighing a greeting.' });
      assert.equal(r.json['usage']['tokens_in'], 12);
      const s = await stream({ input: HELLO, target: { model: 'gemini-2.5-flash' } });
      const { content, reasoning, last } = fold(s.events);
      assert.equal(content, 'Hello from the fake.');
      assert.equal(reasoning, 'Weighing a greeting.');
      assert.equal(last.event, 'execution.completed');
    });

    it('answers a function call as a tool call', async () => {
      const r = await execute({ input: { ...HELLO, tools: TOOLS }, target: { model: 'gemini-2.5-flash-tool_call' } });
      assert.equal(r.status, 200);
      const calls = r.json['output']['tool_calls'] as Json[];
      assert.equal(calls[0]?.['function']['name'], GEMINI_CALL.name);
      assert.deepEqual(JSON.parse(calls[0]?.['function']['arguments']), GEMINI_CALL.args);
    });

    it("relays Google's error status as the type", async () => {
      const r = await execute({ input: HELLO, target: { model: 'gemini-2.5-flash-error_400' } });
      assert.equal(r.status, 400);
      assert.deepEqual(r.json, { error: { message: 'scripted 400', type: 'INVALID_ARGUMENT', code: 400 } });
      assert.equal(r.headers.get('x-gw-error'), null);
    });
  });

  describe('cloudy (translated)', () => {
    const MODEL = 'anthropic.claude-3-5-haiku-20241022-v1:0';

    it('answers the execution object, whole and streamed, tool calls included', async () => {
      const r = await execute({ input: HELLO, target: { model: MODEL } });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      assert.equal(r.json['provider'], 'cloudy');
      assert.equal(typeof r.json['output']['content'], 'string');
      assert.ok(r.json['output']['content'].length > 0);
      const s = await stream({ input: HELLO, target: { model: MODEL } });
      const { content, last } = fold(s.events);
      assert.equal(last.event, 'execution.completed');
      assert.equal(last.data['output']['content'], content);
      const tool = await stream({ input: { ...HELLO, tools: TOOLS }, target: { model: `${MODEL}-tool_use` } });
      const folded = fold(tool.events);
      assert.deepEqual(folded.tools.get(0), { id: BEDROCK_TOOL_USE.toolUseId, name: 'get_weather', arguments: JSON.stringify(BEDROCK_TOOL_USE.input) });
      assert.equal(folded.last.data['finish_reason'], 'tool_calls');
    });

    it("relays Bedrock's exception name as the type", async () => {
      const r = await execute({ input: HELLO, target: { model: `${MODEL}-error_429` } });
      assert.equal(r.status, 429);
      assert.deepEqual(r.json, { error: { message: 'scripted 429', type: 'ThrottlingException', code: 429 } });
      assert.equal(r.headers.get('x-gw-error'), null);
    });
  });

  describe('validation', () => {
    const cases: Array<[string, unknown, string]> = [
      ['an unknown top-level field', { input: HELLO, target: { model: 'gpt-4o-mini' }, extra: 1 }, 'extra'],
      ['an unknown execution field', { input: HELLO, target: { model: 'gpt-4o-mini' }, execution: { speed: 'fast' } }, 'execution.speed'],
      ['max_tokens out of range', { input: HELLO, target: { model: 'gpt-4o-mini' }, execution: { max_tokens: 0 } }, 'execution.max_tokens'],
      ['max_tokens of the wrong type', { input: HELLO, target: { model: 'gpt-4o-mini' }, execution: { max_tokens: '10' } }, 'execution.max_tokens'],
      ['temperature out of range', { input: HELLO, target: { model: 'gpt-4o-mini' }, execution: { temperature: 3 } }, 'execution.temperature'],
      ['a message content of the wrong type', { input: { messages: [{ role: 'user', content: 5 }] }, target: { model: 'gpt-4o-mini' } }, 'input.messages.0.content'],
      ['a missing input', { target: { model: 'gpt-4o-mini' } }, 'input'],
      ['fallbacks that are not model ids', { input: HELLO, target: { model: 'gpt-4o-mini', fallbacks: ['gpt-4o', 7] } }, 'target.fallbacks.1'],
      ['a content part the translation cannot carry', { input: { messages: [{ role: 'user', content: [{ type: 'input_audio' }] }] }, target: { model: 'claude-sonnet-4-5' } }, 'input.messages.0.content.0.type'],
      ['a fallback whose translation cannot carry the call', { input: HELLO, target: { model: 'gpt-4o-mini', fallbacks: ['claude-sonnet-4-5'] }, execution: { max_tokens: 500, reasoning: { effort: 'low' } } }, 'execution.max_tokens'],
      ['a provider that does not serve the model', { input: HELLO, target: { model: 'gpt-4o-mini', provider: 'msgvendor' } }, 'target.provider'],
      ['a provider that speaks no chat format', { input: HELLO, target: { model: 'my-deployment', provider: 'cloudx' } }, 'target.model'],
    ];
    for (const [name, body, field] of cases) {
      it(`refuses ${name}: 400 detail naming ${field}, nothing sent upstream`, async () => {
        const before = openai.received.length + anthropic.received.length;
        const r = await execute(body);
        assert.equal(r.status, 400, JSON.stringify(r.json));
        assert.equal(r.headers.get('x-gw-error'), 'request_error');
        assert.equal(r.json['detail']['field'], field, JSON.stringify(r.json));
        assert.equal(typeof r.json['detail']['error'], 'string');
        assert.equal(openai.received.length + anthropic.received.length, before);
      });
    }

    it('answers 402 onboarding_incomplete when no model is named and no router runs', async () => {
      const r = await execute({ input: HELLO });
      assert.equal(r.status, 402);
      assert.equal(r.json['error']['type'], 'onboarding_incomplete');
      assert.equal(r.headers.get('x-gw-error'), 'onboarding_incomplete');
    });

    it('answers 401 without a developer key', async () => {
      const r = await ask(gw, '/v1/execute', { body: { input: HELLO, target: { model: 'gpt-4o-mini' } } });
      assert.equal(r.status, 401);
      assert.equal(r.json['error']['type'], 'invalid_developer_key');
    });
  });

  describe('skill overrides', () => {
    const refusals: Array<[string, Record<string, string>, unknown, string]> = [
      ['an unknown skill in x-gw-skills', { 'x-gw-skills': 'mind_reading=prod' }, undefined, 'x-gw-skills'],
      ['an unknown mode', { 'x-gw-skills': 'pii_redaction=sometimes' }, undefined, 'x-gw-skills'],
      ['a canary per request', { 'x-gw-skills': 'pii_redaction=canary:5' }, undefined, 'x-gw-skills'],
      ['rolled_back per request', { 'x-gw-skills': 'semantic_cache=rolled_back' }, undefined, 'x-gw-skills'],
      ['a malformed pair', { 'x-gw-skills': 'pii_redaction' }, undefined, 'x-gw-skills'],
      ['a canary in skill_overrides', {}, { pii_redaction: 'canary' }, 'skill_overrides.pii_redaction'],
      ['an unknown skill in skill_overrides', {}, { guardrails: 'off' }, 'skill_overrides.guardrails'],
    ];
    for (const [name, headers, overrides, field] of refusals) {
      it(`refuses ${name} with 400 request_error before anything goes upstream`, async () => {
        const before = openai.received.length;
        const r = await execute({ input: HELLO, target: { model: 'gpt-4o-mini' }, ...(overrides !== undefined && { skill_overrides: overrides }) }, headers);
        assert.equal(r.status, 400, JSON.stringify(r.json));
        assert.equal(r.headers.get('x-gw-error'), 'request_error');
        assert.equal(r.json['detail']['field'], field);
        assert.equal(openai.received.length, before);
      });
    }

    it('refuses an override of a locked skill with 403 skill_locked listing it', async () => {
      const { bootstrap: b2, devKey: key2 } = oneTenant('acme-locked');
      const gw2 = await startTestGateway({ bootstrap: b2, env: { GW_UPSTREAM_OPENAI: openai.origin } });
      try {
        const set = await call(gw2, '/api/v1/dev_key/skills', { key: key2, body: { dev_key_id: 'dk-acme-locked', skill_modes: { pii_redaction: 'prod' }, locked_skills: { pii_redaction: true } } });
        assert.equal(set.status, 200, JSON.stringify(set.json));
        const before = openai.received.length;
        const body = { input: HELLO, target: { model: 'gpt-4o-mini' } };
        const headers = { 'x-gw-provider-key': 'sk-test' };
        const r = await ask(gw2, '/v1/execute', { key: key2, body, headers: { ...headers, 'x-gw-skills': 'pii_redaction=off' } });
        assert.equal(r.status, 403);
        assert.equal(r.headers.get('x-gw-error'), 'skill_locked');
        assert.deepEqual(r.json, { detail: { error: 'skill_locked', locked: ['pii_redaction'] } });
        const viaBody = await ask(gw2, '/v1/execute', { key: key2, body: { ...body, skill_overrides: { pii_redaction: 'shadow' } }, headers });
        assert.equal(viaBody.status, 403);
        assert.equal(openai.received.length, before, 'nothing sent upstream');
        // the locked skill's stored mode shows, and an override of another skill is fine
        const ok = await ask(gw2, '/v1/execute', { key: key2, body, headers: { ...headers, 'x-gw-skills': 'semantic_cache=shadow' } });
        assert.equal(ok.status, 200);
        const modes = Object.fromEntries((ok.json['trace']['skills'] as Json[]).map((s) => [s['skill'], s['mode']]));
        assert.equal(modes['pii_redaction'], 'prod');
        assert.equal(modes['semantic_cache'], 'shadow');
      } finally {
        await gw2.close();
      }
    });
  });

  describe('fallbacks', () => {
    for (const status of [500, 429, 503]) {
      it(`tries the next model when the first answers ${status} before any byte reached the caller`, async () => {
        const n = openai.received.length;
        const r = await execute({ input: HELLO, target: { model: `error_${status}`, fallbacks: ['gpt-4o-mini'] } });
        assert.equal(r.status, 200, JSON.stringify(r.json));
        assert.deepEqual(
          openai.received.slice(n).map((c) => bodyOf(c)['model']),
          [`error_${status}`, 'gpt-4o-mini'],
        );
        assert.equal(r.json['model'], 'gpt-4o-mini');
        assert.deepEqual(r.json['trace']['route'], { model: 'gpt-4o-mini', reason: 'fallback 1' });
      });
    }

    it('a fallback attempt\'s row is not a client retry: the gateway sent the same body again, not the caller', async () => {
      // a per-key skill in shadow makes each attempt's row a scorecard sample
      const body = {
        input: { messages: [{ role: 'user', content: `fallback row ${randomUUID()}` }] },
        target: { model: 'error_500', fallbacks: ['gpt-4o-mini'] },
        skill_overrides: { prompt_compaction: 'shadow' },
      };
      // the process's scorecard window holds the rows scorecards read (no Redis here): what this request's two attempts add to it
      const window = gw.gateway.scorecardRows as ProcessRowWindow;
      const totals = async () => {
        const samples = (await window.samples('acme-execute', { skill: 'prompt_compaction', sinceMs: 0, nowMs: Date.now(), group: () => 'all' })).get('all');
        const sum = (name: 'n' | 'rt' | 'err') => ARMS.reduce((n, arm) => n + (samples?.arms[arm].totals[name] ?? 0), 0);
        return { requests: sum('n'), retries: sum('rt'), upstreamErrors: sum('err') };
      };
      const before = await totals();
      const r = await execute(body);
      assert.equal(r.status, 200);
      const after = await totals();
      assert.deepEqual(
        { requests: after.requests - before.requests, retries: after.retries - before.retries, upstreamErrors: after.upstreamErrors - before.upstreamErrors },
        { requests: 2, retries: 0, upstreamErrors: 1 },
      );
    });

    it('falls back across providers, and streams from the model that answered', async () => {
      const s = await stream({ input: HELLO, target: { model: 'error_500', fallbacks: ['claude-sonnet-4-5'] } });
      assert.equal(s.status, 200);
      assert.deepEqual(s.events[0]?.data['provider'], 'msgvendor');
      assert.equal(fold(s.events).last.event, 'execution.completed');
    });

    it('answers the last failure when every candidate fails', async () => {
      const r = await execute({ input: HELLO, target: { model: 'error_500', fallbacks: ['error_503'] } });
      assert.equal(r.status, 503);
      assert.equal(r.json['error']['message'], 'scripted 503');
      assert.equal(r.headers.get('x-gw-error'), null);
    });

    it('does not fall back on a 4xx other than 429', async () => {
      const n = openai.received.length;
      const r = await execute({ input: HELLO, target: { model: 'error_400', fallbacks: ['gpt-4o-mini'] } });
      assert.equal(r.status, 400);
      assert.equal(openai.received.length, n + 1);
    });

    it('does not fall back once bytes reached the caller', async () => {
      const n = openai.received.length;
      const s = await stream({ input: HELLO, target: { model: 'break_stream', fallbacks: ['gpt-4o-mini'] } });
      assert.equal(s.status, 200);
      assert.equal(s.events[s.events.length - 1]?.event, 'error');
      assert.equal(openai.received.length, n + 1, 'the fallback was not called');
    });

    it('tries the next model when the first cannot be connected to', async () => {
      const refused = await closedPort();
      const { bootstrap: b3, devKey: key3 } = oneTenant('acme-refused');
      // on 127.0.0.2: the port was let go, and any listener on 127.0.0.1 bound from port 0 meanwhile (this gateway, or a gateway of
      // another test process) may have been given it; one answered the call 401 (invalid_developer_key) where nothing should answer
      const gw3 = await startTestGateway({ bootstrap: b3, env: { GW_UPSTREAM_MSGVENDOR: `http://127.0.0.2:${refused}`, GW_UPSTREAM_OPENAI: openai.origin } });
      try {
        const r = await ask(gw3, '/v1/execute', { key: key3, body: { input: HELLO, target: { model: 'claude-sonnet-4-5', fallbacks: ['gpt-4o-mini'] } }, headers: { 'x-gw-provider-key': 'k' } });
        assert.equal(r.status, 200, JSON.stringify(r.json));
        assert.equal(r.json['provider'], 'openai');
        const alone = await ask(gw3, '/v1/execute', { key: key3, body: { input: HELLO, target: { model: 'claude-sonnet-4-5' } }, headers: { 'x-gw-provider-key': 'k' } });
        assert.equal(alone.status, 502, 'without a fallback the connect failure is answered');
      } finally {
        await gw3.close();
      }
    });

    it('takes one rate-limit token per request, however many candidates it tries', async () => {
      // a cap of 1 request per second holds a burst of 2: nine attempts each taking a token would be refused
      const devKey4 = devKeySecret('acme-one-token');
      const b4: Bootstrap = { orgs: [{ org_id: 'acme-one-token', rps_cap: 1 }], dev_keys: [{ org_id: 'acme-one-token', dev_key_id: 'dk-one-token', api_key: devKey4 }] };
      const gw4 = await startTestGateway({ bootstrap: b4, env: { GW_UPSTREAM_OPENAI: openai.origin } });
      try {
        const n = openai.received.length;
        const failing = Array.from({ length: 7 }, () => 'error_500');
        const r = await ask(gw4, '/v1/execute', { key: devKey4, body: { input: HELLO, target: { model: 'error_500', fallbacks: [...failing, 'gpt-4o-mini'] } }, headers: { 'x-gw-provider-key': 'k' } });
        assert.equal(r.status, 200, JSON.stringify(r.json));
        assert.equal(openai.received.length, n + 9, 'every candidate was tried');
        assert.deepEqual(r.json['trace']['route'], { model: 'gpt-4o-mini', reason: 'fallback 8' });
      } finally {
        await gw4.close();
      }
    });

    it('refuses a fallback model the org has not enabled before anything goes upstream', async () => {
      const { bootstrap: b5, devKey: key5 } = oneTenant('acme-scoped');
      const gw5 = await startTestGateway({ bootstrap: b5, env: { GW_UPSTREAM_OPENAI: openai.origin } });
      try {
        const set = await call(gw5, '/api/v1/model_access/update', { key: key5, body: { models: ['gpt-4o-mini'] } });
        assert.equal(set.status, 200, JSON.stringify(set.json));
        const n = openai.received.length;
        const r = await ask(gw5, '/v1/execute', { key: key5, body: { input: HELLO, target: { model: 'gpt-4o-mini', fallbacks: ['gpt-4o'] } }, headers: { 'x-gw-provider-key': 'k' } });
        assert.equal(r.status, 403, JSON.stringify(r.json));
        assert.equal(r.headers.get('x-gw-error'), 'model_not_in_scope');
        assert.equal(openai.received.length, n, 'nothing sent upstream');
        const ok = await ask(gw5, '/v1/execute', { key: key5, body: { input: HELLO, target: { model: 'gpt-4o-mini' } }, headers: { 'x-gw-provider-key': 'k' } });
        assert.equal(ok.status, 200, JSON.stringify(ok.json));
      } finally {
        await gw5.close();
      }
    });
  });

  it('gives up with 504 when no answer began within execution.timeout_ms', async () => {
    const r = await execute({ input: HELLO, target: { model: 'slow_3000' }, execution: { timeout_ms: 100 } });
    assert.equal(r.status, 504);
    assert.equal(r.json['error']['type'], 'gateway_timeout');
  });
});

describe('POST /v1/execute when a gateway stage fails open', () => {
  const { bootstrap, devKey } = oneTenant('acme-execute-open');
  let openai: FakeVendor;
  let gw: TestGateway;

  before(async () => {
    openai = await startFakeOpenAI();
    // a corrupt model-access document makes the admission stage throw: a real fault of the gateway's own
    const dir = scratchDir('gw-execute-open-');
    const corrupt = { org_policy: { 'model_access:acme-execute-open': { org_id: 'acme-execute-open', models: 5, updated_at: '2026-01-01T00:00:00Z' } } };
    await writeFile(join(dir, 'state.json'), JSON.stringify(corrupt));
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_OPENAI: openai.origin, GW_DATA_DIR: dir, GW_SECRETS_KEY: SECRETS_KEY } });
  });
  after(async () => {
    await gw.close();
    await openai.close();
  });

  it('relays the call directly, and the trace says so as the header does', async () => {
    const r = await ask(gw, '/v1/execute', { key: devKey, body: { input: HELLO, target: { model: 'gpt-4o-mini' } }, headers: { 'x-gw-provider-key': 'k' } });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.headers.get('x-gw-served-by'), 'direct_passthrough');
    assert.equal(r.json['object'], 'execution');
    assert.equal(r.json['trace']['served_by'], 'direct_passthrough');
  });
});
