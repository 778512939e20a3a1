import { num, sseUsageReader } from '../sse.js';
import type { StreamUsageReader, Usage } from '../types.js';

/**
 * Usage in the messages wire format: `usage` on a reply; in a stream,
 * `message_start` carries input tokens and `message_delta` the running output.
 */
export function messagesUsage(reply: unknown): Usage | undefined {
  if (typeof reply !== 'object' || reply === null) return undefined;
  const r = reply as Record<string, unknown>;
  const u = (r['usage'] ?? (r['message'] as Record<string, unknown> | undefined)?.['usage']) as Record<string, unknown> | undefined;
  if (!u) return undefined;
  const cached = num(u['cache_read_input_tokens']);
  return {
    input_tokens: num(u['input_tokens']) + cached + num(u['cache_creation_input_tokens']),
    output_tokens: num(u['output_tokens']),
    cached_tokens: cached,
  };
}

/** The stream's usage after one event, from what it was before (undefined: the event carries none). */
export function nextMessagesUsage(event: Record<string, unknown>, acc: Usage | undefined): Usage | undefined {
  const u = messagesUsage(event);
  if (!u) return undefined;
  // message_delta repeats only what changed; keep the input side from message_start
  if (event['type'] === 'message_delta' && acc) {
    return { input_tokens: u.input_tokens || acc.input_tokens, output_tokens: u.output_tokens, cached_tokens: u.cached_tokens || acc.cached_tokens };
  }
  return u;
}

export const messagesStreamUsage = (): StreamUsageReader => sseUsageReader(['"usage"'], nextMessagesUsage);
