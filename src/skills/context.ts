import type { SkillInput } from '../pipeline/types.js';
import type { FoldParams } from '../tenancy/skills.js';
import type { StageContext } from './stage.js';

/** Where the main thread reads what a stage's context holds: the in-process mirrors, never a store round trip. */
export interface ContextSources {
  /** catalog ids the org may call; null: every catalog model (ModelAccess.models) */
  allowedModels(orgId: string): readonly string[] | null;
  /** providers the org has a stored key for */
  storedProviders(orgId: string): readonly string[];
  /** providers the operator serves itself (self-hosted destinations), reachable by every org */
  selfHosted: readonly string[];
  /** the key's `skill_params.agent_trajectory_compaction` */
  foldParams(keyId: string): FoldParams | undefined;
}

/**
 * The StageContext of one request (model_routing, agent_trajectory_compaction):
 * the org's allowed models; the providers it can reach now: a stored key's,
 * the operator's own servers, and the call's provider when the caller passed
 * a vendor key through; the model the route planned (a model in the path);
 * the key's fold parameters.
 */
export function stageContext(src: ContextSources, input: SkillInput): StageContext {
  const { org, key, provider, model } = input.call;
  const allowed = src.allowedModels(org.org_id);
  const reachable = new Set([...src.storedProviders(org.org_id), ...src.selfHosted]);
  if (input.presented?.vendorKey !== undefined) reachable.add(provider);
  const foldParams = src.foldParams(key.key_id);
  return {
    ...(allowed !== null && { allowedModels: [...allowed] }),
    reachableProviders: [...reachable],
    ...(model !== undefined && { model }),
    ...(foldParams !== undefined && { foldParams }),
  };
}
