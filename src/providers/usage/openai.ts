import { num } from '../sse.js';
import type { StreamUsageReader, Usage } from '../types.js';
import { field, list, sseUsageReader } from './sse-reader.js';
import type { StreamedText } from './streamed-text.js';

/**
 * Chat-completions usage (prompt/completion) or Responses usage (input/output),
 * with the model the reply names. Optional fields are set on the literal, not
 * spread into a copy (a property added to a spread's copy takes V8's slow path).
 */
function openaiUsage(u: unknown, model: string | undefined): Usage | undefined {
  if (typeof u !== 'object' || u === null) return undefined;
  const r = u as Record<string, unknown>;
  const details = (r['prompt_tokens_details'] ?? r['input_tokens_details']) as Record<string, unknown> | undefined;
  const cached = details?.['cached_tokens'];
  const usage: Usage = {
    input_tokens: num(r['prompt_tokens'] ?? r['input_tokens']),
    output_tokens: num(r['completion_tokens'] ?? r['output_tokens']),
    cached_tokens: num(cached),
  };
  if (typeof cached !== 'number') usage.cache_unreported = true;
  if (model !== undefined) usage.model = model;
  return usage;
}

/** Usage of a chat-completions or Responses reply, a chat chunk, or a Responses stream event, with the model it names. */
export const openaiReplyUsage = (reply: unknown): Usage | undefined => {
  if (typeof reply !== 'object' || reply === null) return undefined;
  const r = reply as Record<string, unknown>;
  // a Responses stream event carries the response object; a chat chunk carries usage itself
  const response = r['response'] as Record<string, unknown> | undefined;
  const model = r['model'] ?? response?.['model'];
  return openaiUsage(r['usage'] ?? response?.['usage'], typeof model === 'string' ? model : undefined);
};

/**
 * Reply text of a chat chunk (content, refusal, reasoning, tool-call
 * arguments per choice) or of a Responses `*.delta` event (output text,
 * reasoning summary, function-call arguments).
 */
function openaiText(event: Record<string, unknown>, out: StreamedText): void {
  const type = event['type'];
  if (typeof type === 'string') {
    // audio deltas are base64 sound, not text
    if (type.endsWith('.delta') && !type.includes('audio')) out.add(event['delta']);
    return;
  }
  for (const choice of list(event, 'choices')) {
    const delta = field(choice, 'delta');
    if (!delta) continue;
    out.add(delta['content']);
    out.add(delta['refusal']);
    out.add(delta['reasoning_content']);
    for (const call of list(delta, 'tool_calls')) out.add(field(call, 'function')?.['arguments']);
  }
}

/** Chat-completions and Responses streams: usage where `stream_options.include_usage` (or the Responses API) sends it. */
export const openaiStreamUsage = (): StreamUsageReader =>
  sseUsageReader({ usageMarkers: ['"usage":{', '"usage": {'], usage: (event) => openaiReplyUsage(event), textMarkers: ['delta"'], text: openaiText });
