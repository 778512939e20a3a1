import type { CatalogModel } from '../providers/catalog.js';
import type { ProviderId } from '../providers/types.js';
import { converseToChatReply } from './chat-converse/reply.js';
import { chatToConverseRequest } from './chat-converse/request.js';
import { generateContentToChatReply } from './chat-generate-content/reply.js';
import { chatToGenerateContentRequest } from './chat-generate-content/request.js';
import { messagesToChatReply } from './chat-messages/reply.js';
import { chatToMessagesRequest } from './chat-messages/request.js';
import type { ChatRequest, ReplyContext, TranslatedCall } from './types.js';

/** Output tokens asked for when the caller sets no limit and the target requires one (a model the catalog does not size). */
const FALLBACK_MAX_TOKENS = 4096;

export type ChatTranslator = (body: ChatRequest, ctx: ReplyContext, model: CatalogModel | undefined) => TranslatedCall;

/** THE table of chat-completions translations: one pair (request side, reply side) per provider whose wire format is not chat completions. */
const TRANSLATORS: Partial<Record<ProviderId, ChatTranslator>> = {
  msgvendor: (body, ctx, model) => ({ ...chatToMessagesRequest(body, model?.max_output_tokens ?? FALLBACK_MAX_TOKENS), reply: messagesToChatReply(ctx) }),
  genvendor: (body, ctx) => ({ ...chatToGenerateContentRequest(body), reply: generateContentToChatReply(ctx) }),
  cloudy: (body, ctx) => ({ ...chatToConverseRequest(body), reply: converseToChatReply(ctx) }),
};

/** The translation of chat completions to `provider`, or undefined when the provider speaks chat completions itself. */
export const chatTranslator = (provider: ProviderId): ChatTranslator | undefined => TRANSLATORS[provider];
