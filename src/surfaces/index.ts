import type { ErrorRenderer, KeyCarrier, Surface } from '../http/types.js';
import { API_KEY, BEARER, GOOG_API_KEY, QUERY_KEY, X_API_KEY } from './carriers.js';
import { converseEnvelope, generateContentEnvelope, messagesEnvelope, nativeEnvelope, responsesEnvelope, sharedEnvelope } from './envelopes.js';

const surface = (id: string, carriers: readonly KeyCarrier[], envelope: ErrorRenderer): Surface => ({ id, carriers, ...envelope });

/** THE surface table: id, key carriers and error envelope of every surface. */
export const SURFACES = {
  /** /v1/execute: the native envelope */
  execute: surface('execute', [BEARER], nativeEnvelope),
  chat_completions: surface('chat_completions', [BEARER], sharedEnvelope),
  generate_content: surface('generate_content', [GOOG_API_KEY, QUERY_KEY, BEARER], generateContentEnvelope),
  converse: surface('converse', [BEARER], converseEnvelope),
  /** /v1/responses and its cloudx forms */
  responses: surface('responses', [BEARER, API_KEY], responsesEnvelope),
  /** /cloudx/compat/…: Azure OpenAI paths */
  cloudx: surface('cloudx', [API_KEY, BEARER], sharedEnvelope),
  messages: surface('messages', [X_API_KEY, BEARER], messagesEnvelope),
  count_tokens: surface('count_tokens', [X_API_KEY, BEARER], messagesEnvelope),
  /** /v1/messages: the exact received bytes, levers off */
  parity_relay: { ...surface('parity_relay', [X_API_KEY, BEARER], messagesEnvelope), leversOff: true },
  /** configuration, admin and telemetry routes */
  api: surface('api', [BEARER], sharedEnvelope),
  /** unauthenticated reads: health, models, metrics; also the envelope of unmatched paths */
  public: surface('public', [], sharedEnvelope),
} as const satisfies Record<string, Surface>;
