import type { ErrorRenderer } from '../http/types.js';
import { BEARER, GOOG_API_KEY, QUERY_KEY, type KeyCarrier } from './carriers.js';
import { converseEnvelope, generateContentEnvelope, sharedEnvelope } from './envelopes.js';

export interface Surface extends ErrorRenderer {
  readonly id: string;
  /** where this surface's SDKs carry a key, besides x-gw-key */
  readonly carriers: readonly KeyCarrier[];
}

const surface = (id: string, carriers: readonly KeyCarrier[], envelope: ErrorRenderer): Surface => ({ id, carriers, ...envelope });

/** THE surface table: id, key carriers and error envelope of every surface. */
export const SURFACES = {
  chat_completions: surface('chat_completions', [BEARER], sharedEnvelope),
  generate_content: surface('generate_content', [GOOG_API_KEY, QUERY_KEY, BEARER], generateContentEnvelope),
  converse: surface('converse', [BEARER], converseEnvelope),
  /** configuration, admin and telemetry routes */
  api: surface('api', [BEARER], sharedEnvelope),
  /** unauthenticated reads: health, models, metrics; also the envelope of unmatched paths */
  public: surface('public', [], sharedEnvelope),
} as const satisfies Record<string, Surface>;
