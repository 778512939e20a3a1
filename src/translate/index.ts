import type { CatalogModel } from '../providers/catalog.js';
import type { ProviderId } from '../providers/types.js';
import { converseToChatReply } from './chat-converse/reply.js';
import { chatToConverseRequest } from './chat-converse/request.js';
import { generateContentToChatReply } from './chat-generate-content/reply.js';
import { chatToGenerateContentRequest } from './chat-generate-content/request.js';
import { messagesToChatReply } from './chat-messages/reply.js';
import { chatToMessagesRequest } from './chat-messages/request.js';
import type { JsonText } from './chat/body-writer.js';
import type { ChatRequest, ReplyContext, TranslatedCall } from './types.js';

/** Output tokens asked for when the caller sets no limit and the target requires one (a model the catalog does not size). */
const FALLBACK_MAX_TOKENS = 4096;

/** `out`: the text the translated body is written into (a JsonText sized by the caller's body, or a DiscardedText to check the call alone) */
export type ChatTranslator = (body: ChatRequest, ctx: ReplyContext, model: CatalogModel | undefined, out: JsonText) => TranslatedCall;

/** THE table of chat-completions translations: one pair (request side, reply side) per provider whose wire format is not chat completions. */
const TRANSLATORS: Partial<Record<ProviderId, ChatTranslator>> = {
  msgvendor: (body, ctx, model, out) => ({ ...chatToMessagesRequest(body, model?.max_output_tokens ?? FALLBACK_MAX_TOKENS, out), reply: messagesToChatReply(ctx) }),
  genvendor: (body, ctx, _model, out) => ({ ...chatToGenerateContentRequest(body, out), reply: generateContentToChatReply(ctx) }),
  cloudy: (body, ctx, _model, out) => ({ ...chatToConverseRequest(body, out), reply: converseToChatReply(ctx) }),
};

/** The translation of chat completions to `provider`, or undefined when the provider speaks chat completions itself. */
export const chatTranslator = (provider: ProviderId): ChatTranslator | undefined => TRANSLATORS[provider];
