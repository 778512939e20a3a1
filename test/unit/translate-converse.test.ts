import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from '../../src/errors.js';
import { exceptionFrame } from '../../src/providers/eventstream.js';
import { Providers } from '../../src/providers/index.js';
import { converseToChatReply } from '../../src/translate/chat-converse/reply.js';
import { chatToConverseRequest } from '../../src/translate/chat-converse/request.js';
import type { ReplyContext, StreamTransform } from '../../src/translate/types.js';
import { converseToolFrames, eventFrame } from '../fakes/bedrock.js';
import { JsonText } from '../../src/translate/chat/body-writer.js';

const ctx: ReplyContext = { model: 'amazon.nova-pro-v1:0', created: 1700000000, fallbackId: 'chatcmpl-req1', includeUsage: true };
const providers = new Providers({});
/** the pair's request side, addressed by its provider as the chat surface does */
const translate = (body: Record<string, unknown>, headers: Record<string, string> = {}) => {
  const request = chatToConverseRequest({ model: 'amazon.nova-pro-v1:0', messages: [{ role: 'user', content: 'hi' }], ...body }, new JsonText());
  return { ...request, ...providers.target('cloudy', request.operation, headers), body: request.body, reply: converseToChatReply(ctx) };
};

function run(t: StreamTransform, pieces: Buffer[]): string {
  let out = '';
  for (const p of pieces) out += t.push(p)?.toString() ?? '';
  return out + (t.end() ?? '');
}

const STREAM = Buffer.concat(converseToolFrames());

describe('chat completions → converse: request', () => {
  it('path by stream flag with the model id encoded; the region header sets the location', () => {
    const call = translate({ stream: true }, { 'x-gw-aws-region': 'eu-central-1' });
    assert.equal(call.path, '/model/amazon.nova-pro-v1%3A0/converse-stream');
    assert.deepEqual(call.location, { region: 'eu-central-1' });
    const plain = translate({});
    assert.equal(plain.path, '/model/amazon.nova-pro-v1%3A0/converse');
  });

  it('refuses a bad region, an https image, an unsupported image type and tool_choice none', () => {
    const refused = (fn: () => unknown, field: RegExp) => assert.throws(fn, (e: unknown) => e instanceof GatewayError && e.status === 400 && field.test(e.message));
    refused(() => translate({}, { 'x-gw-aws-region': 'evil.example.com/' }), /x-gw-aws-region/);
    refused(() => translate({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x.test/a.png' } }] }] }), /data: URL/);
    refused(() => translate({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/tiff;base64,AAAA' } }] }] }), /image\/tiff/);
    refused(() => translate({ tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: 'none' }), /tool_choice/);
  });
});

describe('chat completions ← converse: reply', () => {
  const reply = translate({}).reply;

  it('guardrail_intervened is a content_filter stop', () => {
    const out = JSON.parse(reply.json({ output: { message: { role: 'assistant', content: [{ text: 'x' }] } }, stopReason: 'guardrail_intervened', usage: { inputTokens: 1, outputTokens: 1 } }).body.toString()) as {
      id: string;
      choices: Array<{ finish_reason: string }>;
    };
    assert.equal(out.choices[0]?.finish_reason, 'content_filter');
    assert.equal(out.id, 'chatcmpl-req1');
  });

  it('an error names the AWS exception as its code', () => {
    assert.deepEqual(JSON.parse(reply.error(400, Buffer.from('{"message":"bad input"}'), { 'x-amzn-errortype': 'ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/' }).toString()), {
      error: { message: 'bad input', type: 'invalid_request_error', param: null, code: 'ValidationException' },
    });
  });

  it('event frames become chunks, finish, usage and [DONE]; the same at every byte cut', () => {
    const whole = run(reply.stream(), [STREAM]);
    assert.match(whole, /"content":"Checking\."/);
    assert.match(whole, /"tool_calls":\[\{"index":0,"id":"tooluse_fake01","type":"function","function":\{"arguments":"","name":"get_weather"\}\}\]/);
    assert.match(whole, /"finish_reason":"tool_calls"/);
    assert.match(whole, /"usage":\{"prompt_tokens":40,"completion_tokens":12,"total_tokens":52,/);
    assert.ok(whole.endsWith('data: [DONE]\n\n'));
    for (let cut = 1; cut < STREAM.length; cut++) assert.equal(run(reply.stream(), [STREAM.subarray(0, cut), STREAM.subarray(cut)]), whole, `cut at byte ${cut}`);
  });

  it('an exception frame becomes an error chunk, and nothing after it', () => {
    const frames = Buffer.concat([eventFrame('messageStart', { role: 'assistant' }), exceptionFrame('throttlingException', '{"message":"slow down"}'), eventFrame('messageStop', { stopReason: 'end_turn' })]);
    const out = run(reply.stream(), [frames]);
    assert.match(out, /data: \{"error":\{"message":"slow down","type":"throttlingException","param":null,"code":null\}\}\n\n$/);
    assert.doesNotMatch(out, /\[DONE\]/);
  });
});
