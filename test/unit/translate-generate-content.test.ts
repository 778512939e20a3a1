import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from '../../src/errors.js';
import { Providers } from '../../src/providers/index.js';
import { generateContentToChatReply } from '../../src/translate/chat-generate-content/reply.js';
import { chatToGenerateContentRequest } from '../../src/translate/chat-generate-content/request.js';
import type { ReplyContext, StreamTransform } from '../../src/translate/types.js';
import { JsonText } from '../../src/translate/chat/body-writer.js';

const ctx: ReplyContext = { model: 'gemini-x', created: 1700000000, fallbackId: 'chatcmpl-req1', includeUsage: true };
const providers = new Providers({});
/** the pair's request side, addressed by its provider as the chat surface does */
const translate = (body: Record<string, unknown>) => {
  const request = chatToGenerateContentRequest({ model: 'gemini-x', messages: [{ role: 'user', content: 'hi' }], ...body }, new JsonText());
  return { ...request, ...providers.target('genvendor', request.operation, {}), body: request.body, reply: generateContentToChatReply(ctx) };
};

function run(t: StreamTransform, pieces: Buffer[]): string {
  let out = '';
  for (const p of pieces) out += t.push(p)?.toString() ?? '';
  return out + (t.end() ?? '');
}

const data = (r: unknown) => `data: ${JSON.stringify(r)}\r\n\r\n`;
const STREAM = Buffer.from(
  [
    data({ candidates: [{ content: { parts: [{ text: 'thinking…', thought: true }], role: 'model' } }], responseId: 'r1' }),
    data({ candidates: [{ content: { parts: [{ text: 'Grüße ' }], role: 'model' } }], usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 1 }, responseId: 'r1' }),
    data({ candidates: [{ content: { parts: [{ functionCall: { name: 'f', args: { a: 1 } } }], role: 'model' }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 4, thoughtsTokenCount: 2 }, responseId: 'r1' }),
  ].join(''),
);

describe('chat completions → generateContent: request', () => {
  it('streams on :streamGenerateContent?alt=sse; strips a models/ prefix', () => {
    assert.equal(translate({ model: 'models/gemini-x', stream: true }).path, '/v1beta/models/gemini-x:streamGenerateContent?alt=sse');
    assert.equal(translate({}).path, '/v1beta/models/gemini-x:generateContent');
  });

  it('refuses a model name that could reshape the path, a tool result without its call, and parallel_tool_calls false', () => {
    const refused = (body: Record<string, unknown>, field: RegExp) => assert.throws(() => translate(body), (e: unknown) => e instanceof GatewayError && e.status === 400 && field.test(e.message));
    refused({ model: 'gemini-x/../../v1/files' }, /^model/);
    refused({ messages: [{ role: 'tool', tool_call_id: 'nope', content: 'x' }] }, /messages\[0\]\.tool_call_id/);
    refused({ tools: [{ type: 'function', function: { name: 'f' } }], parallel_tool_calls: false }, /parallel_tool_calls/);
  });

  it('a JSON object tool result goes as the response object itself; none is mode NONE', () => {
    const body = JSON.parse(
      translate({
        messages: [
          { role: 'assistant', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
          { role: 'tool', tool_call_id: 'c1', content: '{"temp":18}' },
        ],
        tools: [{ type: 'function', function: { name: 'f' } }],
        tool_choice: 'none',
      }).body.toString(),
    ) as Record<string, unknown>;
    assert.deepEqual((body['contents'] as unknown[])[1], { role: 'user', parts: [{ functionResponse: { name: 'f', response: { temp: 18 } } }] });
    assert.deepEqual(body['toolConfig'], { functionCallingConfig: { mode: 'NONE' } });
  });
});

describe('chat completions ← generateContent: reply', () => {
  const reply = translate({}).reply;

  it('a blocked prompt is a content_filter stop', () => {
    const out = JSON.parse(reply.json({ promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 3 } }).body.toString()) as { choices: Array<{ finish_reason: string; message: { content: string } }> };
    assert.equal(out.choices[0]?.finish_reason, 'content_filter');
    assert.equal(out.choices[0]?.message.content, '');
  });

  it('MAX_TOKENS is length', () => {
    const out = JSON.parse(reply.json({ candidates: [{ content: { parts: [{ text: 'a' }] }, finishReason: 'MAX_TOKENS' }] }).body.toString()) as { choices: Array<{ finish_reason: string }> };
    assert.equal(out.choices[0]?.finish_reason, 'length');
  });

  it('a stream: text without the thought, the call, finish, usage, [DONE]; the same at every cut', () => {
    const whole = run(reply.stream(), [STREAM]);
    const events = whole.split('\n\n').filter(Boolean);
    assert.equal(events[events.length - 1], 'data: [DONE]');
    assert.match(whole, /"content":"Grüße "/);
    assert.doesNotMatch(whole, /thinking/);
    assert.match(whole, /"tool_calls":\[\{"index":0,"id":"call_r1_0","type":"function","function":\{"arguments":"\{\\"a\\":1\}","name":"f"\}\}\]/);
    assert.match(whole, /"finish_reason":"tool_calls"/);
    assert.match(whole, /"usage":\{"prompt_tokens":5,"completion_tokens":6,"total_tokens":11,"prompt_tokens_details":\{"cached_tokens":0\},"completion_tokens_details":\{"reasoning_tokens":2\}\}/);
    for (let cut = 1; cut < STREAM.length; cut++) assert.equal(run(reply.stream(), [STREAM.subarray(0, cut), STREAM.subarray(cut)]), whole, `cut at byte ${cut}`);
  });

  it('an error event in the stream becomes an error chunk and no [DONE]', () => {
    const out = run(reply.stream(), [Buffer.from(data({ error: { code: 500, message: 'boom', status: 'INTERNAL' } }))]);
    assert.equal(out, `data: ${JSON.stringify({ error: { message: 'boom', type: 'INTERNAL', param: null, code: null } })}\n\n`);
  });
});
