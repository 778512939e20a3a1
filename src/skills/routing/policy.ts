import { CATALOG, type CatalogModel } from '../../providers/catalog.js';
import type { StageContext } from '../stage.js';
import type { RequestNeeds } from './needs.js';

/**
 * The routing policy, deterministic and explainable (docs/skills.md):
 *
 * - Eligible: a catalog model the org may call (`allowedModels`) at a
 *   provider it can reach (`reachableProviders`), with every capability the
 *   request needs ('chat'; 'tools' when it declares or carries tools;
 *   'vision' for images; 'reasoning' when it asks for reasoning;
 *   'responses' on the Responses surface), room in its context window for
 *   the prompt and the output budget, and an output limit at least that budget.
 * - Cheapest: by the request's estimated price at catalog rates (prompt
 *   tokens × input price + output budget, or 1,024 tokens, × output price);
 *   ties by model id.
 * - A named model is routed down only when the request is simple (below) and
 *   an eligible model of the same provider is cheaper.
 */

export type Capability = CatalogModel['capabilities'][number];

/** output tokens assumed for the price estimate when the request sets no budget */
export const ASSUMED_OUTPUT_TOKENS = 1024;

/** a request routed down must be within all of these */
export const SIMPLE = { maxPromptTokens: 1000, maxUserTurns: 3, maxOutputTokens: 2048 } as const;

export function requiredCapabilities(needs: RequestNeeds, surface: string): Capability[] {
  const caps: Capability[] = ['chat'];
  if (needs.tools) caps.push('tools');
  if (needs.vision) caps.push('vision');
  if (needs.reasoning) caps.push('reasoning');
  if (surface === 'responses') caps.push('responses');
  return caps;
}

/** USD the request would cost on `m` at catalog rates (the ranking key) */
export const estimatedUsd = (m: CatalogModel, needs: RequestNeeds): number =>
  (needs.promptTokens * m.price.input + (needs.maxOutputTokens ?? ASSUMED_OUTPUT_TOKENS) * m.price.output) / 1e6;

const fits = (m: CatalogModel, needs: RequestNeeds, caps: readonly Capability[]): boolean =>
  caps.every((c) => m.capabilities.includes(c)) &&
  needs.promptTokens + (needs.maxOutputTokens ?? 0) <= m.context_window &&
  (needs.maxOutputTokens === undefined || needs.maxOutputTokens <= m.max_output_tokens);

const permitted = (m: CatalogModel, ctx: StageContext | undefined): boolean =>
  (ctx?.allowedModels === undefined || ctx.allowedModels.includes(m.id)) && (ctx?.reachableProviders === undefined || ctx.reachableProviders.includes(m.provider));

/** the eligible models, cheapest first */
export function eligible(needs: RequestNeeds, caps: readonly Capability[], ctx: StageContext | undefined, provider?: string): CatalogModel[] {
  return CATALOG.filter((m) => (provider === undefined || m.provider === provider) && permitted(m, ctx) && fits(m, needs, caps))
    .map((m) => ({ m, usd: estimatedUsd(m, needs) }))
    .sort((a, b) => a.usd - b.usd || (a.m.id < b.m.id ? -1 : a.m.id > b.m.id ? 1 : 0))
    .map((x) => x.m);
}

/** why a request is not simple, or undefined when it is */
export function notSimple(needs: RequestNeeds): string | undefined {
  if (needs.tools) return 'uses tools';
  if (needs.vision) return 'has images';
  if (needs.reasoning) return 'asks for reasoning';
  if (needs.structured) return 'asks for structured output';
  if (needs.promptTokens > SIMPLE.maxPromptTokens) return `prompt of ${needs.promptTokens} tokens > ${SIMPLE.maxPromptTokens}`;
  if (needs.userTurns > SIMPLE.maxUserTurns) return `${needs.userTurns} user turns > ${SIMPLE.maxUserTurns}`;
  if (needs.maxOutputTokens !== undefined && needs.maxOutputTokens > SIMPLE.maxOutputTokens) return `output budget ${needs.maxOutputTokens} > ${SIMPLE.maxOutputTokens}`;
  return undefined;
}
