import { lookupModel } from '../../providers/catalog.js';

/**
 * The dollar ledger of one fold. Before the fold, the prompt's first C tokens
 * were a cached prefix (billed at the cached-input price); after it, the
 * prefix still matches only up to the fold point P. So
 *   saved  = tokens_saved × input price
 *   lost   = max(0, C − P) tokens now billed at input instead of cached input
 *   net    = saved − lost × (input − cached_input)
 * C is the text at or before the last prompt-cache marker where the shape has
 * markers (messages, converse); on shapes without them the provider caches
 * prefixes of 1,024 tokens or more by itself, and the previous request of the
 * same agent carried everything but the final turn, so C is that (or 0 when
 * it is under 1,024 tokens).
 */

export const AUTO_CACHE_MIN_TOKENS = 1024;

export interface FoldLedger {
  model: string;
  tokens_saved: number;
  usd_saved: number;
  cached_tokens_lost: number;
  cache_loss_usd: number;
  net_usd: number;
}

export interface PrefixTokens {
  /** tokens before the fold point */
  beforeFold: number;
  /** tokens at or before the last cache marker, or undefined when the shape carries no marker */
  marked: number | undefined;
  /** tokens of every turn but the final one (what the previous request carried) */
  previousRequest: number;
}

export function cachedPrefix(p: PrefixTokens): number {
  if (p.marked !== undefined) return p.marked;
  return p.previousRequest >= AUTO_CACHE_MIN_TOKENS ? p.previousRequest : 0;
}

/** the fold's ledger at `model`'s catalog prices, or undefined for a model the catalog does not price */
export function foldLedger(model: string | undefined, tokensSaved: number, prefix: PrefixTokens): FoldLedger | undefined {
  const entry = lookupModel(model);
  if (entry === undefined) return undefined;
  const { input, cached_input } = entry.price;
  const lost = Math.max(0, cachedPrefix(prefix) - prefix.beforeFold);
  const usdSaved = (tokensSaved * input) / 1e6;
  const cacheLoss = (lost * (input - cached_input)) / 1e6;
  return { model: entry.id, tokens_saved: tokensSaved, usd_saved: usdSaved, cached_tokens_lost: lost, cache_loss_usd: cacheLoss, net_usd: usdSaved - cacheLoss };
}
