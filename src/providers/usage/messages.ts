import { num } from '../sse.js';
import type { StreamUsageReader, Usage } from '../types.js';
import { field, sseUsageReader } from './sse-reader.js';

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
  const written = num(u['cache_creation_input_tokens']);
  return {
    input_tokens: num(u['input_tokens']) + cached + written,
    output_tokens: num(u['output_tokens']),
    cached_tokens: cached,
    cache_write_tokens: written,
  };
}

/** The stream's usage after one event, from what it was before (undefined: the event carries none). */
export function nextMessagesUsage(event: Record<string, unknown>, acc: Usage | undefined): Usage | undefined {
  const u = messagesUsage(event);
  if (!u) return undefined;
  // message_delta repeats only what changed; keep the input side from message_start
  if (event['type'] === 'message_delta' && acc) {
    return {
      input_tokens: u.input_tokens || acc.input_tokens,
      output_tokens: u.output_tokens,
      cached_tokens: u.cached_tokens || acc.cached_tokens,
      cache_write_tokens: u.cache_write_tokens || acc.cache_write_tokens,
    };
  }
  return u;
}

/** `content_block_delta` text: reply text, thinking, tool-input JSON */
const DELTA_TEXT_FIELDS = ['text', 'thinking', 'partial_json'];

export const messagesStreamUsage = (): StreamUsageReader =>
  sseUsageReader({
    usageMarkers: ['"usage"'],
    usage: nextMessagesUsage,
    textMarkers: ['"content_block_delta"'],
    text: (event, out) => {
      const delta = field(event, 'delta');
      if (event['type'] !== 'content_block_delta' || !delta) return;
      for (const f of DELTA_TEXT_FIELDS) out.add(delta[f]);
    },
  });
