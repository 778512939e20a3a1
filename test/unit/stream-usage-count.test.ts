import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countTokens } from 'gpt-tokenizer';
import { account } from '../../src/pipeline/accounting.js';
import type { Caller } from '../../src/tenancy/types.js';
import type { RelayOutcome } from '../../src/pipeline/relay.js';
import { costUsd } from '../../src/providers/catalog.js';
import { genvendorVertex } from '../../src/providers/genvendor-vertex.js';
import { openai } from '../../src/providers/openai.js';
import type { StreamUsageReader } from '../../src/providers/types.js';
import { converseStreamUsage } from '../../src/providers/usage/converse.js';
import { generateContentStreamUsage } from '../../src/providers/usage/generate-content.js';
import { messagesStreamUsage } from '../../src/providers/usage/messages.js';
import { countedUsage, SAMPLE_CHARS } from '../../src/providers/usage/streamed-text.js';
import { StageClock } from '../../src/http/stages.js';
import type { GatewayRequest } from '../../src/http/types.js';
import { createLogger } from '../../src/telemetry/log.js';
import { createMetrics } from '../../src/telemetry/metrics.js';
import { InspectorRing } from '../../src/telemetry/ring.js';
import { TelemetryRows } from '../../src/telemetry/row-sink.js';
import { converseStreamFrames } from '../fakes/bedrock.js';

const sse = (...events: unknown[]) => Buffer.from(events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join(''));
const chatChunk = (delta: Record<string, unknown>) => ({ id: 'c1', object: 'chat.completion.chunk', model: 'gpt-4o', choices: [{ index: 0, delta, finish_reason: null }] });

/** pushes `bytes` in chunks of `size`, as the relay would */
function read(reader: StreamUsageReader, bytes: Buffer, size = 7): StreamUsageReader {
  for (let at = 0; at < bytes.length; at += size) reader.push(bytes.subarray(at, at + size));
  return reader;
}

describe('a stream without usage: the usage readers keep its reply text', () => {
  it('chat-completions: content, refusal and tool-call arguments, whatever the chunking', () => {
    const bytes = Buffer.concat([
      sse(chatChunk({ role: 'assistant', content: '' }), chatChunk({ content: 'Hello' }), chatChunk({ content: ' world' })),
      sse(chatChunk({ tool_calls: [{ index: 0, function: { name: 'f', arguments: '{"city":' } }] }), chatChunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] })),
      Buffer.from('data: [DONE]\n\n'),
    ]);
    for (const size of [1, 5, 64, bytes.length]) {
      const reader = read(openai.streamUsage(), bytes, size);
      assert.equal(reader.usage(), undefined);
      assert.deepEqual(reader.streamedText(), { text: 'Hello world{"city":"Paris"}', chars: 27 }, `chunks of ${size}`);
    }
  });

  it('responses: the *.delta events, not audio', () => {
    const bytes = sse(
      { type: 'response.created', response: { id: 'r1' } },
      { type: 'response.output_text.delta', delta: 'Bonjour' },
      { type: 'response.audio.delta', delta: 'UklGRiQAAABXQVZF' },
      { type: 'response.function_call_arguments.delta', delta: '{}' },
    );
    assert.deepEqual(read(openai.streamUsage(), bytes).streamedText(), { text: 'Bonjour{}', chars: 9 });
  });

  it('messages: text, thinking and tool-input deltas', () => {
    const bytes = sse(
      { type: 'message_start', message: { id: 'm1', usage: { input_tokens: 9, output_tokens: 1 } } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Hmm.' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Hi' } },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"a":1}' } },
    );
    assert.deepEqual(read(messagesStreamUsage(), bytes).streamedText(), { text: 'Hmm.Hi{"a":1}', chars: 13 });
  });

  it('generate-content: each candidate part, on Vertex too', () => {
    const bytes = sse({ candidates: [{ content: { role: 'model', parts: [{ text: 'Ciao' }, { functionCall: { name: 'f', args: { x: 1 } } }] } }] });
    assert.deepEqual(read(generateContentStreamUsage(), bytes).streamedText(), { text: 'Ciao{"x":1}', chars: 11 });
    assert.deepEqual(read(genvendorVertex.streamUsage(), bytes).streamedText(), { text: 'Ciao{"x":1}', chars: 11 });
  });

  it('converse: contentBlockDelta text and reasoning frames', () => {
    const withoutMetadata = Buffer.concat(converseStreamFrames().slice(0, -1));
    const reader = read(converseStreamUsage(), withoutMetadata, 13);
    assert.equal(reader.usage(), undefined);
    assert.deepEqual(reader.streamedText(), { text: 'Weighing a greeting.Hello from the fake.', chars: 40 });
  });

  it('keeps a bounded sample of a long stream and scales its count by the whole length', () => {
    const word = 'lorem ipsum dolor sit amet, ';
    const pieces = Math.ceil((SAMPLE_CHARS * 4) / word.length);
    const reader = read(openai.streamUsage(), sse(...Array.from({ length: pieces }, () => chatChunk({ content: word }))), 4096);
    const sample = reader.streamedText();
    assert.equal(sample.text.length, SAMPLE_CHARS);
    assert.equal(sample.chars, pieces * word.length);
    const counted = countedUsage(sample, Buffer.alloc(0));
    const exact = countTokens(word.repeat(pieces));
    assert.ok(Math.abs(counted.output_tokens - exact) / exact < 0.01, `${counted.output_tokens} vs ${exact}`);
  });
});

describe('accounting a stream that ended without usage', () => {
  const caller = { org: { org_id: 'acme' }, key: { key_id: 'k1' } } as unknown as Caller;
  const body = Buffer.from(JSON.stringify({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] }));
  const outcome = (o: Partial<RelayOutcome>): RelayOutcome => ({ status: 200, usage: undefined, upstreamMs: 1, overheadMs: 1, dispatched: true, streamed: true, ...o });
  const req = { id: 'r1', headers: {}, body, stages: new StageClock() } as unknown as GatewayRequest;
  const record = (o: Partial<RelayOutcome>) => ({
    requestId: 'r1',
    endpoint: 'chat_completions',
    provider: 'openai' as const,
    model: 'gpt-4o',
    caller,
    latencyMs: 1,
    requestBody: body,
    outcome: outcome(o),
    req,
    answer: {},
    failOpenReason: undefined,
    credentialSource: 'pass_through' as const,
  });
  /** the ring behind the real row sink, as accounting feeds it */
  const rowsInto = (ring: InspectorRing) => new TelemetryRows(ring, undefined, createMetrics(), createLogger('silent'));

  it('charges the counted tokens and marks the row usage_estimated', () => {
    const ring = new InspectorRing(4);
    const cost = account(rowsInto(ring), record({ streamedText: { text: 'hi', chars: 2 } }));
    const counted = { input_tokens: countTokens(body.toString()), output_tokens: countTokens('hi'), cached_tokens: 0 };
    assert.equal(cost, costUsd('gpt-4o', counted, 'openai'));
    const row = ring.find('acme', 'r1')?.row;
    assert.equal(row?.usage_estimated, true);
    assert.equal(row?.tokens_in, counted.input_tokens);
    assert.equal(row?.tokens_out, counted.output_tokens);
    assert.equal(row?.cost_usd, cost);
  });

  it('a reply that reports usage is not estimated', () => {
    const ring = new InspectorRing(4);
    const usage = { input_tokens: 12, output_tokens: 5, cached_tokens: 2 };
    assert.equal(account(rowsInto(ring), record({ usage })), costUsd('gpt-4o', usage, 'openai'));
    assert.equal(ring.find('acme', 'r1')?.row.usage_estimated, false);
  });

  it('a client gone before any reply byte keeps the whole reservation (no cost to settle on)', () => {
    const ring = new InspectorRing(4);
    assert.equal(account(rowsInto(ring), record({ status: 499, streamed: false })), undefined);
    assert.equal(ring.find('acme', 'r1')?.row.usage_estimated, false);
  });
});
