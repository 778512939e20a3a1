import type { ProviderId, Usage } from './types.js';

export interface CatalogModel {
  id: string;
  provider: ProviderId;
  /** USD per million tokens */
  price: { input: number; output: number; cached_input: number; cache_write: number };
  context_window: number;
  max_output_tokens: number;
  capabilities: Array<'chat' | 'tools' | 'vision' | 'reasoning' | 'responses'>;
  /** a LoRA adapter's base model: the org may call the adapter when it may call this */
  base_model?: string;
}

const m = (
  id: string,
  provider: ProviderId,
  input: number,
  output: number,
  cached: number,
  context: number,
  maxOut: number,
  capabilities: CatalogModel['capabilities'],
  cacheWrite = input,
): CatalogModel => ({ id, provider, price: { input, output, cached_input: cached, cache_write: cacheWrite }, context_window: context, max_output_tokens: maxOut, capabilities });

/** Anthropic bills a prompt-cache write (5-minute TTL) at 1.25× input, on its own API and on Bedrock; the others bill writes as input. */
const ANTHROPIC_CACHE_WRITE = 1.25;

/** The models the gateway ships with: who serves them and what they cost. */
export const SHIPPED_CATALOG: readonly CatalogModel[] = [
  m('gpt-4o', 'openai', 2.5, 10, 1.25, 128_000, 16_384, ['chat', 'tools', 'vision', 'responses']),
  m('gpt-4o-mini', 'openai', 0.15, 0.6, 0.075, 128_000, 16_384, ['chat', 'tools', 'vision', 'responses']),
  m('gpt-4.1', 'openai', 2, 8, 0.5, 1_047_576, 32_768, ['chat', 'tools', 'vision', 'responses']),
  m('gpt-4.1-mini', 'openai', 0.4, 1.6, 0.1, 1_047_576, 32_768, ['chat', 'tools', 'vision', 'responses']),
  m('gpt-4.1-nano', 'openai', 0.1, 0.4, 0.025, 1_047_576, 32_768, ['chat', 'tools', 'vision', 'responses']),
  m('gpt-5', 'openai', 1.25, 10, 0.125, 400_000, 128_000, ['chat', 'tools', 'vision', 'reasoning', 'responses']),
  m('gpt-5-mini', 'openai', 0.25, 2, 0.025, 400_000, 128_000, ['chat', 'tools', 'vision', 'reasoning', 'responses']),
  m('o3', 'openai', 2, 8, 0.5, 200_000, 100_000, ['chat', 'tools', 'vision', 'reasoning', 'responses']),
  m('o4-mini', 'openai', 1.1, 4.4, 0.275, 200_000, 100_000, ['chat', 'tools', 'vision', 'reasoning', 'responses']),
  m('text-embedding-3-small', 'openai', 0.02, 0, 0, 8_191, 0, []),
  m('claude-opus-4-1', 'msgvendor', 15, 75, 1.5, 200_000, 32_000, ['chat', 'tools', 'vision', 'reasoning'], 15 * ANTHROPIC_CACHE_WRITE),
  m('claude-sonnet-4-5', 'msgvendor', 3, 15, 0.3, 200_000, 64_000, ['chat', 'tools', 'vision', 'reasoning'], 3 * ANTHROPIC_CACHE_WRITE),
  m('claude-sonnet-4-0', 'msgvendor', 3, 15, 0.3, 200_000, 64_000, ['chat', 'tools', 'vision', 'reasoning'], 3 * ANTHROPIC_CACHE_WRITE),
  m('claude-haiku-4-5', 'msgvendor', 1, 5, 0.1, 200_000, 64_000, ['chat', 'tools', 'vision', 'reasoning'], 1 * ANTHROPIC_CACHE_WRITE),
  m('claude-3-5-haiku', 'msgvendor', 0.8, 4, 0.08, 200_000, 8_192, ['chat', 'tools', 'vision'], 0.8 * ANTHROPIC_CACHE_WRITE),
  m('gemini-2.5-pro', 'genvendor', 1.25, 10, 0.31, 1_048_576, 65_536, ['chat', 'tools', 'vision', 'reasoning']),
  m('gemini-2.5-flash', 'genvendor', 0.3, 2.5, 0.075, 1_048_576, 65_536, ['chat', 'tools', 'vision', 'reasoning']),
  m('gemini-2.5-flash-lite', 'genvendor', 0.1, 0.4, 0.025, 1_048_576, 65_536, ['chat', 'tools', 'vision']),
  m('gemini-2.0-flash', 'genvendor', 0.1, 0.4, 0.025, 1_048_576, 8_192, ['chat', 'tools', 'vision']),
  m('anthropic.claude-sonnet-4-5-20250929-v1:0', 'cloudy', 3, 15, 0.3, 200_000, 64_000, ['chat', 'tools', 'vision', 'reasoning'], 3 * ANTHROPIC_CACHE_WRITE),
  m('anthropic.claude-3-5-haiku-20241022-v1:0', 'cloudy', 0.8, 4, 0.08, 200_000, 8_192, ['chat', 'tools'], 0.8 * ANTHROPIC_CACHE_WRITE),
  m('anthropic.claude-3-5-sonnet-20240620-v1:0', 'cloudy', 3, 15, 0.3, 200_000, 8_192, ['chat', 'tools', 'vision'], 3 * ANTHROPIC_CACHE_WRITE),
  m('anthropic.claude-3-7-sonnet-20250219-v1:0', 'cloudy', 3, 15, 0.3, 200_000, 64_000, ['chat', 'tools', 'vision', 'reasoning'], 3 * ANTHROPIC_CACHE_WRITE),
  m('anthropic.claude-sonnet-4-20250514-v1:0', 'cloudy', 3, 15, 0.3, 200_000, 64_000, ['chat', 'tools', 'vision', 'reasoning'], 3 * ANTHROPIC_CACHE_WRITE),
  m('amazon.nova-pro-v1:0', 'cloudy', 0.8, 3.2, 0.2, 300_000, 5_000, ['chat', 'tools', 'vision']),
  m('amazon.nova-lite-v1:0', 'cloudy', 0.06, 0.24, 0.015, 300_000, 5_000, ['chat', 'tools', 'vision']),
  m('meta.llama3-3-70b-instruct-v1:0', 'cloudy', 0.72, 0.72, 0, 128_000, 8_192, ['chat']),
];

const live: CatalogModel[] = [...SHIPPED_CATALOG];
/**
 * The models the gateway knows by name: the shipped ones with the operator's
 * catalog file applied (GW_CATALOG_FILE), and those the operator's self-hosted
 * destinations serve (GW_DESTINATIONS_FILE). It decides the provider of a bare
 * model name and the cost of every call.
 */
export const CATALOG: readonly CatalogModel[] = live;
let BY_ID = new Map<string, CatalogModel>();
let BY_LENGTH: CatalogModel[] = [];
index();

function index(): void {
  BY_ID = new Map(live.map((c) => [c.id, c]));
  BY_LENGTH = [...live].sort((a, b) => b.id.length - a.id.length);
}

/**
 * Makes the catalog the shipped models with `operator`'s entries applied: an
 * entry of a shipped id replaces it, a new id joins. Runs at start, before any
 * call is served; the catalog is one per process.
 */
export function applyOperatorCatalog(operator: readonly CatalogModel[]): void {
  const byId = new Map(SHIPPED_CATALOG.map((c) => [c.id, c]));
  for (const c of operator) byId.set(c.id, c);
  live.splice(0, live.length, ...byId.values());
  index();
}

/**
 * Adds `models` to the catalog (an entry of an id already there replaces it):
 * the self-hosted destinations' models, joined after the operator's catalog
 * file is applied. Runs at start, before any call is served.
 */
export function joinCatalog(models: readonly CatalogModel[]): void {
  const byId = new Map(live.map((c) => [c.id, c]));
  for (const c of models) byId.set(c.id, c);
  live.splice(0, live.length, ...byId.values());
  index();
}

/** A model id the catalog holds exactly (not a variant of one). */
export const isCatalogId = (id: string): boolean => BY_ID.has(id);

/**
 * The catalog entry for a model name as callers send it: exact, a dated or
 * suffixed variant (`gpt-4o-2024-08-06`, `claude-sonnet-4-5-20250929`), or a
 * cross-region Bedrock id (`us.anthropic…`), or a Bedrock model or
 * inference-profile ARN (`arn:aws:bedrock:…:foundation-model/anthropic…`).
 */
export function lookupModel(name: string | undefined): CatalogModel | undefined {
  if (!name) return undefined;
  const exact = BY_ID.get(name);
  if (exact) return exact;
  const bare = name
    .replace(/^arn:aws[a-z-]*:bedrock:[^/]*\//, '')
    .replace(/^(us|us-gov|eu|apac|jp|au|global)\./, '')
    .replace(/^models\//, '');
  return BY_ID.get(bare) ?? BY_LENGTH.find((c) => bare.startsWith(`${c.id}-`) || bare.startsWith(`${c.id}@`));
}

/**
 * The catalog model a call is priced as: the one it asked for, or, when that
 * name is not a catalog model (an Azure deployment name), the one the reply
 * says served it.
 */
export function pricedModel(asked: string | undefined, usage: Usage | undefined): string | undefined {
  return lookupModel(asked) ? asked : (usage?.model ?? asked);
}

/** Providers that host another's models under names of their own (an Azure deployment runs an OpenAI model). */
const HOSTS_MODELS_OF: Partial<Record<ProviderId, ProviderId>> = { cloudx: 'openai' };

/**
 * The most expensive catalog model a provider serves (by output, then input
 * price), for a worst case when the model asked for is unknown; a provider
 * with no catalog models of its own is priced by the models it hosts, and
 * failing that by the whole catalog.
 */
export function priciestModel(provider: ProviderId): CatalogModel {
  const sameModelsAs = HOSTS_MODELS_OF[provider];
  const pick = (models: readonly CatalogModel[]) =>
    models.reduce<CatalogModel | undefined>((best, m) => (!best || m.price.output > best.price.output || (m.price.output === best.price.output && m.price.input > best.price.input) ? m : best), undefined);
  const own = live.filter((m) => m.provider === provider);
  const same = sameModelsAs === undefined ? [] : live.filter((m) => m.provider === sameModelsAs);
  return (pick(own) ?? pick(same) ?? pick(live)) as CatalogModel;
}

/**
 * USD for a call's usage at catalog prices. A model the catalog does not know
 * (a fine-tune, a deployment name the reply does not resolve) is priced as
 * its provider's priciest model, as its reservation was, until the operator
 * prices it (GW_CATALOG_FILE): an unpriced model never passes a cap for free.
 */
export function costUsd(model: string | undefined, usage: Usage | undefined, provider: ProviderId): number {
  if (!usage) return 0;
  const { price } = lookupModel(model) ?? priciestModel(provider);
  const written = usage.cache_write_tokens ?? 0;
  const plain = Math.max(0, usage.input_tokens - usage.cached_tokens - written);
  return (plain * price.input + usage.cached_tokens * price.cached_input + written * price.cache_write + usage.output_tokens * price.output) / 1e6;
}

/** USD for a call's usage at a self-hosted destination's own prices (per million tokens; no cache discount). */
export function costAtPrice(price: { input: number; output: number }, usage: Usage | undefined): number {
  return usage ? (usage.input_tokens * price.input + usage.output_tokens * price.output) / 1e6 : 0;
}
