import type { Operation } from '../providers/adapter.js';
import type { Usage } from '../providers/types.js';

/**
 * Rewrites a vendor's reply into another wire format on its way to the
 * caller. The relay uses it only when a plan carries one, and takes the
 * call's usage from it: the vendor's bytes are read once, by the translator.
 */
export interface ReplyTransform {
  /** content-type of what `stream()` writes */
  readonly streamContentType: string;
  /** a whole 2xx JSON reply, already parsed by the relay: the caller's bytes and the vendor's usage */
  json(reply: unknown): { body: Buffer; usage: Usage | undefined };
  /** a vendor error reply (non-2xx), as the caller's wire format shapes errors */
  error(status: number, body: Buffer, headers: Readonly<Record<string, string | string[] | undefined>>): Buffer;
  /** a translator for one streamed reply */
  stream(): StreamTransform;
  /**
   * A reply of the caller's format stored for an earlier request and served
   * again (a cache hit): its whole body, or one event of its stream, with the
   * per-call fields made this request's. Absent: served as stored.
   */
  replay?(stored: Buffer): Buffer;
}

export interface StreamTransform {
  /** bytes of the vendor stream in, bytes for the caller out (undefined: nothing to write yet) */
  push(chunk: Buffer): Buffer | string | undefined;
  /** the vendor ended the stream: whatever closes the caller's stream */
  end(): string | undefined;
  /** the vendor's usage read so far, from the same pass that translates */
  usage(): Usage | undefined;
}

/** A chat-completions body as this module reads it (every field optional: it came from the caller). */
export interface ChatRequest {
  model: string;
  messages: unknown;
  stream?: unknown;
  [param: string]: unknown;
}

/** The request side of a translation: what the vendor is asked for (its provider addresses it) and in which bytes. */
export interface TranslatedRequest {
  operation: Operation;
  body: Buffer;
  /** upstream headers the vendor's format requires */
  headers?: Record<string, string>;
}

/** What a chat-completions call becomes for another vendor: its request, and the translation of its reply. */
export interface TranslatedCall extends TranslatedRequest {
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
