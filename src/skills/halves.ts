import type { SkillInput } from '../pipeline/types.js';
import { cacheHalf } from './cache/half.js';
import type { SemanticCache } from './cache/lookup.js';
import type { StageHalf } from './engine.js';
import { piiHalf } from './pii/tap.js';

/**
 * The stages with a main-thread half, by stage id: pii_redaction restores
 * the caller's values in the reply; semantic_cache reaches its store and
 * keeps replies. Every other stage is whole in its worker.
 */
export const stageHalves =
  (cache: SemanticCache) =>
  (input: SkillInput, stage: string, acting: boolean): StageHalf | undefined => {
    if (stage === 'pii_redaction') return piiHalf(input.surface.id, acting);
    if (stage === 'semantic_cache') return cacheHalf(cache, input, acting);
    return undefined;
  };
