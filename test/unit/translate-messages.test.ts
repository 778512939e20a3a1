import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from '../../src/errors.js';
import { messagesToChatReply } from '../../src/translate/chat-messages/reply.js';
import { chatToMessagesRequest } from '../../src/translate/chat-messages/request.js';
import type { ReplyContext, StreamTransform } from '../../src/translate/types.js';
import { DiscardedText, JsonText } from '../../src/translate/chat/body-writer.js';

const ctx: ReplyContext = { model: 'claude-x', created: 1700000000, fallbackId: 'chatcmpl-req1', includeUsage: true };
const request = (body: Record<string, unknown>) => JSON.parse(chatToMessagesRequest({ model: 'claude-x', messages: [{ role: 'user', content: 'hi' }], ...body }, 1024, new JsonText()).body.toString()) as Record<string, unknown>;

/** Every `data:` payload of a translated stream, parsed ([DONE] kept as a string). */
const events = (text: string): unknown[] =>
  text
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => (e === 'data: [DONE]' ? '[DONE]' : JSON.parse(e.slice(6))));

function run(t: StreamTransform, pieces: Buffer[]): string {
  let out = '';
  for (const p of pieces) out += t.push(p)?.toString() ?? '';
  return out + (t.end() ?? '');
}

const sse = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const STREAM = Buffer.from(
  [
    sse('message_start', { message: { id: 'msg_1', usage: { input_tokens: 10, cache_read_input_tokens: 2, output_tokens: 1 } } }),
    sse('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '' } }),
    sse('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'hmm' } }),
    sse('content_block_start', { index: 1, content_block: { type: 'text', text: '' } }),
    sse('content_block_delta', { index: 1, delta: { type: 'text_delta', text: 'Héllo ✓' } }),
    sse('content_block_start', { index: 2, content_block: { type: 'tool_use', id: 'toolu_1', name: 'f', input: {} } }),
    sse('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '{"a":' } }),
    sse('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '1}' } }),
    sse('message_delta', { delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 7 } }),
    sse('message_stop', {}),
  ].join(''),
);

describe('chat completions → messages: request', () => {
  it('defaults max_tokens, maps stop, user and a named tool choice', () => {
    const body = request({ stop: 'X', user: 'u1', tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: { type: 'function', function: { name: 'f' } } });
    assert.equal(body['max_tokens'], 1024);
    assert.deepEqual(body['stop_sequences'], ['X']);
    assert.deepEqual(body['metadata'], { user_id: 'u1' });
    assert.deepEqual(body['tool_choice'], { type: 'tool', name: 'f' });
    assert.deepEqual(body['tools'], [{ name: 'f', input_schema: { type: 'object', properties: {} } }]);
  });

  it('an https image goes as a URL source; none maps to none', () => {
    const body = request({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x.test/a.png' } }] }], tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: 'none' });
    assert.deepEqual(body['messages'], [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://x.test/a.png' } }] }]);
    assert.deepEqual(body['tool_choice'], { type: 'none' });
  });

  it('refuses what it cannot carry, naming the field, whether its body is written or only checked', () => {
    const checked = (body: Record<string, unknown>) => chatToMessagesRequest({ model: 'claude-x', messages: [{ role: 'user', content: 'hi' }], ...body }, 1024, new DiscardedText());
    const refused = (body: Record<string, unknown>, field: RegExp) => {
      assert.throws(() => request(body), (e: unknown) => e instanceof GatewayError && e.status === 400 && field.test(e.message));
      assert.throws(() => checked(body), (e: unknown) => e instanceof GatewayError && e.status === 400 && field.test(e.message));
    };
    assert.equal(checked({}).body.length, 0, 'a checked call has no body');
    refused({ n: 3 }, /: n$/);
    refused({ response_format: { type: 'json_object' } }, /response_format/);
    refused({ messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }] }, /messages\[0\]\.content\[0\]\.type/);
    refused({ messages: [{ role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '[1]' } }] }] }, /tool_calls\[0\]\.function\.arguments/);
    refused({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://plain.test/a.png' } }] }] }, /https/);
    refused({ tools: [{ type: 'custom', custom: { name: 'x' } }] }, /tools\[0\]/);
  });

  it('takes neutral values of parameters it cannot honour, and ignores OpenAI bookkeeping', () => {
    assert.doesNotThrow(() => request({ n: 1, logprobs: false, presence_penalty: 0, response_format: { type: 'text' }, store: true, metadata: { a: 'b' }, seed: null }));
  });
});

describe('chat completions ← messages: reply', () => {
  const reply = messagesToChatReply(ctx);

  it('a message becomes a chat.completion', () => {
    const out = JSON.parse(
      reply.json({ id: 'msg_9', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }], stop_reason: 'max_tokens', usage: { input_tokens: 3, cache_creation_input_tokens: 2, output_tokens: 4 } }).body.toString(),
    ) as Record<string, unknown>;
    assert.deepEqual(out, {
      id: 'msg_9',
      object: 'chat.completion',
      created: 1700000000,
      model: 'claude-x',
      choices: [{ index: 0, message: { role: 'assistant', content: 'ab', refusal: null }, logprobs: null, finish_reason: 'length' }],
      usage: { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } },
    });
  });

  it('a vendor error becomes the OpenAI envelope; a body that is not JSON keeps its text', () => {
    assert.deepEqual(JSON.parse(reply.error(400, Buffer.from('{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}'), {}).toString()), {
      error: { message: 'bad', type: 'invalid_request_error', param: null, code: null },
    });
    assert.deepEqual(JSON.parse(reply.error(502, Buffer.from('<html>'), {}).toString()), { error: { message: '<html>', type: 'api_error', param: null, code: null } });
  });

  it('a stream becomes chunks, the finish, usage and [DONE]', () => {
    const got = events(run(reply.stream(), [STREAM]));
    const choices = got.slice(0, -2).map((e) => (e as { choices: Array<{ delta: unknown; finish_reason: unknown }> }).choices[0]);
    assert.deepEqual(choices, [
      { index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null },
      { index: 0, delta: { content: 'Héllo ✓' }, logprobs: null, finish_reason: null },
      { index: 0, delta: { tool_calls: [{ index: 0, id: 'toolu_1', type: 'function', function: { arguments: '', name: 'f' } }] }, logprobs: null, finish_reason: null },
      { index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] }, logprobs: null, finish_reason: null },
      { index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '1}' } }] }, logprobs: null, finish_reason: null },
      { index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' },
    ]);
    const usage = got[got.length - 2] as { id: string; choices: unknown[]; usage: Record<string, unknown> };
    assert.equal(usage.id, 'msg_1');
    assert.deepEqual(usage.choices, []);
    assert.deepEqual(usage.usage, { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19, prompt_tokens_details: { cached_tokens: 2 }, completion_tokens_details: { reasoning_tokens: 0 } });
    assert.equal(got[got.length - 1], '[DONE]');
  });

  it('the same events whatever byte the stream is cut at', () => {
    const whole = run(reply.stream(), [STREAM]);
    for (let cut = 1; cut < STREAM.length; cut++) {
      assert.equal(run(reply.stream(), [STREAM.subarray(0, cut), STREAM.subarray(cut)]), whole, `cut at byte ${cut}`);
    }
  });

  it('a stream cut short ends with an error event, never [DONE]', () => {
    const got = events(run(reply.stream(), [STREAM.subarray(0, STREAM.indexOf('message_delta') - 7)]));
    assert.notEqual(got[got.length - 1], '[DONE]');
    assert.match(JSON.stringify(got[got.length - 1]), /ended the stream before the reply was complete/);
  });
});
