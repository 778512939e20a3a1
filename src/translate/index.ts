import type { CatalogModel } from '../providers/catalog.js';
import type { ProviderId } from '../providers/types.js';
import { toConverse } from './converse.js';
import { toGenerateContent } from './generate-content.js';
import { toMessages } from './messages.js';
import type { ChatRequest, ReplyContext, TranslatedCall } from './types.js';

/** Output tokens asked for when the caller sets no limit and the target requires one (a model the catalog does not size). */
const FALLBACK_MAX_TOKENS = 4096;

export type ChatTranslator = (body: ChatRequest, ctx: ReplyContext, headers: Readonly<Record<string, string>>, model: CatalogModel | undefined) => TranslatedCall;

/** THE table of chat-completions translations: one per provider whose wire format is not chat completions. */
const TRANSLATORS: Partial<Record<ProviderId, ChatTranslator>> = {
  msgvendor: (body, ctx, _headers, model) => toMessages(body, ctx, model?.max_output_tokens ?? FALLBACK_MAX_TOKENS),
  genvendor: (body, ctx) => toGenerateContent(body, ctx),
  cloudy: (body, ctx, headers) => toConverse(body, ctx, headers),
};

/** The translation of chat completions to `provider`, or undefined when the provider speaks chat completions itself. */
export const chatTranslator = (provider: ProviderId): ChatTranslator | undefined => TRANSLATORS[provider];
