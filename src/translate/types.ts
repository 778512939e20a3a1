import type { Location } from '../providers/adapter.js';
import type { ProviderId } from '../providers/types.js';

/**
 * Rewrites a vendor's reply into another wire format on its way to the
 * caller. The relay uses it only when a plan carries one; usage is still read
 * from the vendor's own bytes.
 */
export interface ReplyTransform {
  /** content-type of what `stream()` writes */
  readonly streamContentType: string;
  /** a whole 2xx JSON reply, already parsed by the relay */
  json(reply: unknown): Buffer;
  /** a vendor error reply (non-2xx), as the caller's wire format shapes errors */
  error(status: number, body: Buffer, headers: Readonly<Record<string, string | string[] | undefined>>): Buffer;
  /** a translator for one streamed reply */
  stream(): StreamTransform;
}

export interface StreamTransform {
  /** bytes of the vendor stream in, bytes for the caller out (undefined: nothing to write yet) */
  push(chunk: Buffer): Buffer | string | undefined;
  /** the vendor ended the stream: whatever closes the caller's stream */
  end(): string | undefined;
}

/** A chat-completions body as this module reads it (every field optional: it came from the caller). */
export interface ChatRequest {
  model: string;
  messages: unknown;
  stream?: unknown;
  [param: string]: unknown;
}

/** What a chat-completions call becomes for another vendor. */
export interface TranslatedCall {
  provider: ProviderId;
  /** the vendor's path and query, maybe depending on the resolved location */
  path: string | ((location: Location) => string);
  body: Buffer;
  /** where the call goes, when the caller named it (a cloudy region) */
  location?: Location;
  /** upstream headers the vendor's format requires */
  headers?: Record<string, string>;
  reply: ReplyTransform;
}

/** Per-call facts the reply translation needs and a pure function cannot make up. */
export interface ReplyContext {
  /** the model name the caller sent: replies name it, not the vendor's id */
  model: string;
  /** unix seconds of the call (chat.completion `created`) */
  created: number;
  /** an id for replies whose vendor gives none */
  fallbackId: string;
  /** stream_options.include_usage */
  includeUsage: boolean;
  /** write the vendor's reasoning text (thinking, thought parts) as `reasoning_content`: /v1/execute reads it; chat-completions callers are not sent it */
  reasoning?: boolean;
}
