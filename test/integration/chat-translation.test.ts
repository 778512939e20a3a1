import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { startFakeAnthropic, TOOL_USE } from '../fakes/anthropic.js';
import type { FakeVendor, Recorded } from '../fakes/server.js';
import { oneTenant, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const TOOLS: ChatCompletionTool[] = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
];

/** A conversation with every kind of turn: system, developer, images, a tool call and its result. */
const CONVERSATION: ChatCompletionMessageParam[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'developer', content: 'Answer in English.' },
  {
    role: 'user',
    content: [
      { type: 'text', text: 'Weather in Paris? See the picture.' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
    ],
  },
  { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
  { role: 'tool', tool_call_id: 'call_1', content: '18 C, cloudy' },
  { role: 'user', content: 'Thanks. And tomorrow?' },
];

const bodyOf = (r: Recorded | undefined): Record<string, unknown> => {
  assert.ok(r, 'the fake received the call');
  return JSON.parse(r.body.toString('utf8')) as Record<string, unknown>;
};

interface Collected {
  text: string;
  finish: string | null | undefined;
  usage: OpenAI.CompletionUsage | undefined;
  tools: Map<number, { id?: string; name?: string; arguments: string }>;
  chunks: number;
}

async function collect(stream: AsyncIterable<OpenAI.ChatCompletionChunk>): Promise<Collected> {
  const out: Collected = { text: '', finish: undefined, usage: undefined, tools: new Map(), chunks: 0 };
  for await (const c of stream) {
    out.chunks++;
    if (c.usage) out.usage = c.usage;
    const choice = c.choices[0];
    if (!choice) continue;
    out.text += choice.delta.content ?? '';
    if (choice.finish_reason) out.finish = choice.finish_reason;
    for (const t of choice.delta.tool_calls ?? []) {
      const acc = out.tools.get(t.index) ?? { arguments: '' };
      if (t.id) acc.id = t.id;
      if (t.function?.name) acc.name = t.function.name;
      acc.arguments += t.function?.arguments ?? '';
      out.tools.set(t.index, acc);
    }
  }
  return out;
}

describe('chat completions translated to msgvendor (Anthropic Messages)', () => {
  let fake: FakeVendor;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('acme-xlate-msg');

  before(async () => {
    fake = await startFakeAnthropic();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_MSGVENDOR: fake.origin } });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  const client = (headers: Record<string, string> = { 'x-gw-provider-key': 'sk-ant-test' }) =>
    new OpenAI({ apiKey: devKey, baseURL: `${gw.url}/v1`, defaultHeaders: headers, maxRetries: 0 });

  it('sends the Messages wire format and answers a chat.completion', async () => {
    const n = fake.received.length;
    const reply = await client().chat.completions.create({
      model: 'claude-sonnet-4-5',
      messages: CONVERSATION,
      tools: TOOLS,
      tool_choice: 'auto',
      max_completion_tokens: 300,
      temperature: 0.5,
      top_p: 0.9,
      stop: ['END'],
    });
    const got = fake.received[n];
    assert.equal(got?.url, '/v1/messages');
    assert.equal(got?.headers['anthropic-version'], '2023-06-01');
    assert.equal(got?.headers['x-api-key'], 'sk-ant-test');
    assert.deepEqual(bodyOf(got), {
      model: 'claude-sonnet-4-5',
      max_tokens: 300,
      system: [
        { type: 'text', text: 'Be brief.' },
        { type: 'text', text: 'Answer in English.' },
      ],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather in Paris? See the picture.' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
          ],
        },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'call_1', content: '18 C, cloudy' },
            { type: 'text', text: 'Thanks. And tomorrow?' },
          ],
        },
      ],
      tools: [{ name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }],
      tool_choice: { type: 'auto' },
      temperature: 0.5,
      top_p: 0.9,
      stop_sequences: ['END'],
    });
    assert.equal(reply.object, 'chat.completion');
    assert.equal(reply.model, 'claude-sonnet-4-5');
    assert.equal(reply.choices[0]?.message.content, 'Hello from the fake.');
    assert.equal(reply.choices[0]?.finish_reason, 'stop');
    // 21 fresh + 4 read from the cache
    assert.equal(reply.usage?.prompt_tokens, 25);
    assert.equal(reply.usage?.completion_tokens, 9);
    assert.equal(reply.usage?.total_tokens, 34);
    assert.equal(reply.usage?.prompt_tokens_details?.cached_tokens, 4);
  });

  it('answers a tool call as tool_calls, and a required tool choice becomes any', async () => {
    const n = fake.received.length;
    const reply = await client().chat.completions.create({ model: 'claude-sonnet-4-5-tool_use', messages: [{ role: 'user', content: 'Weather?' }], tools: TOOLS, tool_choice: 'required', parallel_tool_calls: false });
    const sent = bodyOf(fake.received[n]);
    assert.deepEqual(sent['tool_choice'], { type: 'any', disable_parallel_tool_use: true });
    assert.equal(sent['max_tokens'], 64_000, 'no limit given: the catalog model maximum');
    const msg = reply.choices[0]?.message;
    assert.equal(reply.choices[0]?.finish_reason, 'tool_calls');
    assert.equal(msg?.content, 'Checking.');
    assert.deepEqual(msg?.tool_calls, [{ id: TOOL_USE.id, type: 'function', function: { name: 'get_weather', arguments: JSON.stringify(TOOL_USE.input) } }]);
  });

  it('streams chat.completion.chunk events ending in [DONE], with the usage chunk', async () => {
    const n = fake.received.length;
    const stream = await client().chat.completions.create({ model: 'claude-sonnet-4-5', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] });
    const got = await collect(stream);
    assert.equal(bodyOf(fake.received[n])['stream'], true);
    assert.equal(got.text, 'Hello from the fake.');
    assert.equal(got.finish, 'stop');
    assert.deepEqual(
      { prompt: got.usage?.prompt_tokens, completion: got.usage?.completion_tokens, total: got.usage?.total_tokens },
      { prompt: 25, completion: 9, total: 34 },
    );
  });

  it('streams a tool call as tool_calls deltas', async () => {
    const got = await collect(await client().chat.completions.create({ model: 'claude-sonnet-4-5-tool_use', stream: true, messages: [{ role: 'user', content: 'Weather?' }], tools: TOOLS }));
    assert.equal(got.text, 'Checking.');
    assert.equal(got.finish, 'tool_calls');
    assert.equal(got.usage, undefined, 'no usage chunk unless asked for');
    assert.deepEqual([...got.tools.values()], [{ id: TOOL_USE.id, name: 'get_weather', arguments: JSON.stringify(TOOL_USE.input) }]);
  });

  it("relays the vendor's error in the OpenAI envelope, without x-gw-error", async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${devKey}`, 'x-gw-provider-key': 'sk-ant-test', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-sonnet-4-5-error_429', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('x-gw-error'), null);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(await res.json(), { error: { message: 'scripted 429', type: 'rate_limit_error', param: null, code: null } });
  });

  it('a vendor error mid-stream reaches the SDK as an error, never as a finished stream', async () => {
    const stream = await client().chat.completions.create({ model: 'claude-sonnet-4-5-overloaded_stream', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    await assert.rejects(collect(stream), (err: unknown) => err instanceof OpenAI.APIError && /Overloaded/.test(err.message));
  });

  it('refuses parameters it cannot carry with a 400 naming them', async () => {
    await assert.rejects(
      client().chat.completions.create({ model: 'claude-sonnet-4-5', n: 2, logprobs: true, messages: [{ role: 'user', content: 'hi' }] }),
      (err: unknown) => err instanceof OpenAI.BadRequestError && /n, logprobs/.test(err.message),
    );
  });

  it('a vendor key on Authorization goes to the vendor as its API key', async () => {
    const n = fake.received.length;
    await new OpenAI({ apiKey: 'sk-ant-direct', baseURL: `${gw.url}/v1`, defaultHeaders: { 'x-gw-key': devKey }, maxRetries: 0 }).chat.completions.create({
      model: 'claude-haiku-4-5',
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(fake.received[n]?.headers['x-api-key'], 'sk-ant-direct');
    assert.equal(fake.received[n]?.headers['authorization'], undefined);
  });
});
