import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { startFakeAnthropic, TOOL_USE } from '../fakes/anthropic.js';
import { BEDROCK_TOOL_USE, startFakeBedrock, type FakeBedrock } from '../fakes/bedrock.js';
import { GEMINI_CALL, startFakeGemini } from '../fakes/gemini.js';
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

  // without the fix the request hangs until the request deadline: fail fast instead
  it('a vendor reply the translator cannot read is a prompt 502, never a request left hanging', { timeout: 15_000 }, async () => {
    await assert.rejects(
      client().chat.completions.create({ model: 'claude-sonnet-4-5-malformed', messages: [{ role: 'user', content: 'hi' }] }),
      (err: unknown) => err instanceof OpenAI.APIError && err.status === 502 && err.headers?.get('x-gw-error') === null,
    );
  });

  it('refuses parameters it cannot carry with a 400 naming them', async () => {
    await assert.rejects(
      client().chat.completions.create({ model: 'claude-sonnet-4-5', n: 2, logprobs: true, messages: [{ role: 'user', content: 'hi' }] }),
      (err: unknown) => err instanceof OpenAI.BadRequestError && /n, logprobs/.test(err.message),
    );
  });

  it("uses the tenant's stored msgvendor key when none is presented", async () => {
    const stored = await fetch(`${gw.url}/api/v1/vendor_key/create`, {
      method: 'POST',
      headers: { authorization: `Bearer ${devKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'msgvendor', api_key: 'sk-ant-stored-0001' }),
    });
    assert.equal(stored.status, 200);
    const n = fake.received.length;
    const reply = await client({}).chat.completions.create({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(reply.choices[0]?.message.content, 'Hello from the fake.');
    assert.equal(fake.received[n]?.headers['x-api-key'], 'sk-ant-stored-0001');
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

describe('chat completions translated to genvendor (Gemini generateContent)', () => {
  let fake: FakeVendor;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('acme-xlate-gen');

  before(async () => {
    fake = await startFakeGemini();
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_GENVENDOR: fake.origin } });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  const client = () => new OpenAI({ apiKey: devKey, baseURL: `${gw.url}/v1`, defaultHeaders: { 'x-gw-provider-key': 'AIza-test' }, maxRetries: 0 });

  it('sends a GenerateContentRequest and answers a chat.completion without the thought', async () => {
    const n = fake.received.length;
    const reply = await client().chat.completions.create({ model: 'gemini-2.5-flash', messages: CONVERSATION, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'get_weather' } }, max_tokens: 200, temperature: 0.2, stop: 'END' });
    const got = fake.received[n];
    assert.equal(got?.url, '/v1beta/models/gemini-2.5-flash:generateContent');
    assert.equal(got?.headers['x-goog-api-key'], 'AIza-test');
    assert.deepEqual(bodyOf(got), {
      contents: [
        { role: 'user', parts: [{ text: 'Weather in Paris? See the picture.' }, { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } }] },
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { result: '18 C, cloudy' } } }, { text: 'Thanks. And tomorrow?' }] },
      ],
      systemInstruction: { parts: [{ text: 'Be brief.' }, { text: 'Answer in English.' }] },
      tools: [{ functionDeclarations: [{ name: 'get_weather', description: 'Weather of a city', parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }] }],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } },
      generationConfig: { maxOutputTokens: 200, temperature: 0.2, stopSequences: ['END'] },
    });
    assert.equal(reply.choices[0]?.message.content, 'Hello from the fake.');
    assert.equal(reply.choices[0]?.finish_reason, 'stop');
    assert.equal(reply.id, 'fake-response-1');
    assert.deepEqual(reply.usage, { prompt_tokens: 12, completion_tokens: 8, total_tokens: 20, prompt_tokens_details: { cached_tokens: 2 }, completion_tokens_details: { reasoning_tokens: 3 } });
  });

  it('answers a function call as tool_calls', async () => {
    const reply = await client().chat.completions.create({ model: 'gemini-2.5-flash-tool_call', messages: [{ role: 'user', content: 'Weather?' }], tools: TOOLS });
    const choice = reply.choices[0];
    assert.equal(choice?.finish_reason, 'tool_calls');
    assert.equal(choice?.message.content, 'Checking.');
    assert.equal(choice?.message.tool_calls?.length, 1);
    const call = choice?.message.tool_calls?.[0];
    assert.equal(call?.type === 'function' && call.function.name, 'get_weather');
    assert.deepEqual(call?.type === 'function' && JSON.parse(call.function.arguments), GEMINI_CALL.args);
  });

  it('streams through :streamGenerateContent?alt=sse, ending in [DONE] with the usage chunk', async () => {
    const n = fake.received.length;
    const got = await collect(await client().chat.completions.create({ model: 'gemini-2.5-flash', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] }));
    assert.equal(fake.received[n]?.url, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    assert.equal(got.text, 'Hello from the fake.');
    assert.equal(got.finish, 'stop');
    assert.deepEqual({ p: got.usage?.prompt_tokens, c: got.usage?.completion_tokens, t: got.usage?.total_tokens }, { p: 12, c: 7, t: 19 });
  });

  it('streams a function call as a tool_calls delta', async () => {
    const got = await collect(await client().chat.completions.create({ model: 'gemini-2.5-flash-tool_call', stream: true, messages: [{ role: 'user', content: 'Weather?' }], tools: TOOLS }));
    assert.equal(got.finish, 'tool_calls');
    const [call] = [...got.tools.values()];
    assert.equal(call?.name, 'get_weather');
    assert.ok(call?.id);
    assert.deepEqual(JSON.parse(call?.arguments ?? ''), GEMINI_CALL.args);
  });

  it("relays the vendor's error in the OpenAI envelope, without x-gw-error", async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${devKey}`, 'x-gw-provider-key': 'AIza-test', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gemini-2.5-flash-error_403', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 403);
    assert.equal(res.headers.get('x-gw-error'), null);
    assert.deepEqual(await res.json(), { error: { message: 'scripted 403', type: 'permission_error', param: null, code: 'PERMISSION_DENIED' } });
  });

  it('refuses an https image URL (genvendor takes images inline)', async () => {
    await assert.rejects(
      client().chat.completions.create({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://img.test/a.png' } }] }] }),
      (err: unknown) => err instanceof OpenAI.BadRequestError && /data: URL/.test(err.message),
    );
  });
});

describe('chat completions translated to cloudy (Bedrock Converse)', () => {
  let fake: FakeBedrock;
  let gw: TestGateway;
  const { bootstrap, devKey } = oneTenant('acme-xlate-cloudy');
  const MODEL = 'anthropic.claude-3-5-haiku-20241022-v1:0';
  const PAIR = 'AKIAFAKEXLATE0000001:fake-secret-access-key';

  before(async () => {
    fake = await startFakeBedrock({ AKIAFAKEXLATE0000001: 'fake-secret-access-key' });
    gw = await startTestGateway({ bootstrap, env: { GW_UPSTREAM_CLOUDY: fake.origin } });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  const client = (headers: Record<string, string> = { 'x-gw-provider-key': 'bedrock-api-key-test' }) =>
    new OpenAI({ apiKey: devKey, baseURL: `${gw.url}/v1`, defaultHeaders: headers, maxRetries: 0 });

  it('sends a Converse body to /model/{id}/converse and answers a chat.completion', async () => {
    const n = fake.received.length;
    const reply = await client().chat.completions.create({ model: MODEL, messages: CONVERSATION, tools: TOOLS, tool_choice: 'required', max_tokens: 100, top_p: 0.8, stop: ['END'] });
    const got = fake.received[n];
    assert.equal(got?.url, `/model/${encodeURIComponent(MODEL)}/converse`);
    assert.equal(got?.headers['authorization'], 'Bearer bedrock-api-key-test');
    assert.deepEqual(bodyOf(got), {
      messages: [
        { role: 'user', content: [{ text: 'Weather in Paris? See the picture.' }, { image: { format: 'png', source: { bytes: 'iVBORw0KGgo=' } } }] },
        { role: 'assistant', content: [{ toolUse: { toolUseId: 'call_1', name: 'get_weather', input: { city: 'Paris' } } }] },
        { role: 'user', content: [{ toolResult: { toolUseId: 'call_1', content: [{ text: '18 C, cloudy' }] } }, { text: 'Thanks. And tomorrow?' }] },
      ],
      system: [{ text: 'Be brief.' }, { text: 'Answer in English.' }],
      inferenceConfig: { maxTokens: 100, topP: 0.8, stopSequences: ['END'] },
      toolConfig: {
        tools: [{ toolSpec: { name: 'get_weather', description: 'Weather of a city', inputSchema: { json: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } } }],
        toolChoice: { any: {} },
      },
    });
    assert.equal(reply.choices[0]?.message.content, 'Hello from the fake.');
    assert.equal(reply.choices[0]?.finish_reason, 'stop');
    // Bedrock counts cache reads apart from inputTokens: 12 + 2
    assert.deepEqual(reply.usage, { prompt_tokens: 14, completion_tokens: 5, total_tokens: 19, prompt_tokens_details: { cached_tokens: 2 }, completion_tokens_details: { reasoning_tokens: 0 } });
  });

  it('an access-key pair signs the translated request with SigV4 for the named region', async () => {
    const signed = fake.signatures.length;
    const reply = await client({ 'x-gw-provider-key': PAIR, 'x-gw-aws-region': 'eu-west-1' }).chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(reply.choices[0]?.message.content, 'Hello from the fake.');
    assert.deepEqual({ region: fake.signatures[signed]?.region, valid: fake.signatures[signed]?.valid }, { region: 'eu-west-1', valid: true });
  });

  it('answers a tool use as tool_calls', async () => {
    const reply = await client().chat.completions.create({ model: `${MODEL}-tool_use`, messages: [{ role: 'user', content: 'Weather?' }], tools: TOOLS });
    assert.equal(reply.choices[0]?.finish_reason, 'tool_calls');
    assert.deepEqual(reply.choices[0]?.message.tool_calls, [{ id: BEDROCK_TOOL_USE.toolUseId, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }]);
  });

  it('decodes ConverseStream event frames (cut mid-frame) into chunks ending in [DONE] with usage', async () => {
    const n = fake.received.length;
    const got = await collect(await client().chat.completions.create({ model: MODEL, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] }));
    assert.equal(fake.received[n]?.url, `/model/${encodeURIComponent(MODEL)}/converse-stream`);
    assert.equal(got.text, 'Hello from the fake.');
    assert.equal(got.finish, 'stop');
    assert.deepEqual({ p: got.usage?.prompt_tokens, c: got.usage?.completion_tokens, cached: got.usage?.prompt_tokens_details?.cached_tokens }, { p: 15, c: 6, cached: 3 });
  });

  it('streams a tool use as tool_calls deltas', async () => {
    const got = await collect(await client().chat.completions.create({ model: `${MODEL}-tool_use`, stream: true, messages: [{ role: 'user', content: 'Weather?' }], tools: TOOLS }));
    assert.equal(got.text, 'Checking.');
    assert.equal(got.finish, 'tool_calls');
    assert.deepEqual([...got.tools.values()], [{ id: BEDROCK_TOOL_USE.toolUseId, name: 'get_weather', arguments: '{"city":"Paris"}' }]);
  });

  it("relays the vendor's error in the OpenAI envelope, without x-gw-error", async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${devKey}`, 'x-gw-provider-key': 'bedrock-api-key-test', 'content-type': 'application/json' },
      body: JSON.stringify({ model: `${MODEL}-error_429`, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('x-gw-error'), null);
    assert.deepEqual(await res.json(), { error: { message: 'scripted 429', type: 'rate_limit_error', param: null, code: 'ThrottlingException' } });
  });

  it('refuses tool_choice none, which Converse cannot express', async () => {
    await assert.rejects(
      client().chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], tools: TOOLS, tool_choice: 'none' }),
      (err: unknown) => err instanceof OpenAI.BadRequestError && /tool_choice/.test(err.message),
    );
  });
});
