import { lookupModel, type CatalogModel } from '../../providers/catalog.js';

/**
 * The dollar ledger of one fold: what the folded request's prompt costs
 * against what the unfolded one would have, at catalog prices.
 *
 * The estimate, made when the fold is chosen: before the fold the prompt's
 * first C tokens were a cached prefix (billed at the cached-input price);
 * after it, the prefix still matches only up to the fold point P. So
 *   saved  = tokens_saved × input price
 *   lost   = max(0, C − P) tokens now billed at input instead of cached input
 *   net    = saved − lost × (input − cached_input)
 * C is the text at or before the last prompt-cache marker where the shape has
 * markers (messages, converse); on shapes without them the provider caches
 * prefixes of 1,024 tokens or more by itself, and the previous request of the
 * same agent carried everything but the final turn, so C is that (or 0 when
 * it is under 1,024 tokens).
 *
 * The true-up (trueUpLedger), once the reply's usage is known: the side that
 * went upstream is billed as the reply says (prompt, cache reads, cache
 * writes), the other side is derived from it (see unfoldedFrom, foldedFrom).
 */

export const AUTO_CACHE_MIN_TOKENS = 1024;

/** the prompt-cache figures of one side of the fold, in prompt tokens */
export interface CacheBill {
  /** the whole prompt */
  input: number;
  /** of it, read from the provider's prompt cache */
  read: number;
  /** of it, written to the provider's prompt cache */
  written: number;
}

export interface FoldLedger {
  model: string;
  tokens_saved: number;
  usd_saved: number;
  /** cache-read tokens the unfolded request has and the folded one has not */
  cached_tokens_lost: number;
  /** their lost discount, plus the extra cache-write premium of the folded request */
  cache_loss_usd: number;
  net_usd: number;
  /** the tokens before the fold point (P) */
  fold_point_tokens: number;
  /** the prefix the unfolded request is taken to read from the cache (C) */
  cached_prefix_tokens: number;
  /** how the provider caches on this shape: at the caller's markers, or every long prefix by itself */
  cache: 'marked' | 'automatic';
  /** false: the estimate; true: recomputed from the reply's cache usage */
  trued_up: boolean;
  /** trued up only: cache-write tokens the folded request has beyond the unfolded one (negative: fewer) */
  cache_write_tokens_added?: number;
  /** trued up only: the reply's figures (the folded request's in treatment, the unfolded one's in shadow) */
  reply?: CacheBill;
  /** trued up only: the estimate it replaced */
  estimate?: { cached_tokens_lost: number; cache_loss_usd: number; net_usd: number };
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

type Price = CatalogModel['price'];

/**
 * The ledger of two bills of the same fold, part by part: the prompt tokens
 * removed at input, the cache reads lost at their discount, the cache writes
 * added at their premium. Its net is the difference of the two bills.
 */
function ledgerOf(unfolded: CacheBill, folded: CacheBill, price: Price) {
  const usdSaved = ((unfolded.input - folded.input) * price.input) / 1e6;
  const lost = unfolded.read - folded.read;
  const added = folded.written - unfolded.written;
  const cacheLoss = (lost * (price.input - price.cached_input) + added * (price.cache_write - price.input)) / 1e6;
  return { usd_saved: usdSaved, cached_tokens_lost: lost, cache_loss_usd: cacheLoss, net_usd: usdSaved - cacheLoss };
}

/** the fold's ledger at `model`'s catalog prices, or undefined for a model the catalog does not price */
export function foldLedger(model: string | undefined, tokensSaved: number, prefix: PrefixTokens): FoldLedger | undefined {
  const entry = lookupModel(model);
  if (entry === undefined) return undefined;
  const c = cachedPrefix(prefix);
  const p = prefix.beforeFold;
  // the estimate has no writes and no prompt beyond what the fold touches: the ledger depends on the difference only
  const unfolded = { input: c + tokensSaved, read: c, written: 0 };
  const folded = { input: c, read: Math.min(c, p), written: 0 };
  return {
    model: entry.id,
    tokens_saved: tokensSaved,
    ...ledgerOf(unfolded, folded, entry.price),
    fold_point_tokens: p,
    cached_prefix_tokens: c,
    cache: prefix.marked === undefined ? 'automatic' : 'marked',
    trued_up: false,
  };
}

const clamp = (n: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, n));

/**
 * What the unfolded request would have read and written, from what the folded
 * one did (S tokens saved, fold point P, estimated cached prefix C):
 * - C ≤ P: the fold lies past the cached prefix; both read and write alike.
 * - the reply read nothing although the unchanged beginning (P ≥ 1,024) was
 *   long enough for an automatic cache: the cache was cold, both read nothing.
 * - the read went past the fold point: the cache held this folded
 *   conversation (an earlier request was folded alike), so without folding it
 *   would have held the unfolded one: R + S, and never less than C.
 * - else the read stopped at the fold; the unfolded request reads C.
 * Writes happen only where the reply reports them (marked caches): the
 * unfolded request reads or writes S more tokens of prefix in all.
 */
function unfoldedFrom(folded: CacheBill, l: FoldLedger): CacheBill {
  const s = l.tokens_saved;
  const input = folded.input + s;
  if (l.cached_prefix_tokens <= l.fold_point_tokens) return { input, read: folded.read, written: folded.written };
  const cold = l.cache === 'automatic' && folded.read === 0 && l.fold_point_tokens >= AUTO_CACHE_MIN_TOKENS;
  const reach = folded.read > l.fold_point_tokens ? folded.read + s : folded.read;
  const read = cold ? 0 : Math.min(input, Math.max(reach, l.cached_prefix_tokens));
  const written = folded.written > 0 ? clamp(folded.read + folded.written + s - read, 0, input - read) : 0;
  return { input, read, written };
}

/**
 * What the folded request would have read and written, from what the
 * unfolded one did (in shadow): with the fold inside the cached prefix, its
 * read stops at the fold point (the folded conversation was never sent, so
 * never cached), and it writes the rest of what the unfolded one read or
 * wrote, S tokens shorter.
 */
function foldedFrom(unfolded: CacheBill, l: FoldLedger): CacheBill {
  const input = Math.max(0, unfolded.input - l.tokens_saved);
  if (l.cached_prefix_tokens <= l.fold_point_tokens) return { input, read: unfolded.read, written: unfolded.written };
  const read = Math.min(unfolded.read, l.fold_point_tokens, input);
  const written = unfolded.written > 0 ? clamp(unfolded.read + unfolded.written - l.tokens_saved - read, 0, input - read) : 0;
  return { input, read, written };
}

/**
 * The ledger recomputed from the reply's cache usage at `price` (the served
 * model's): `sent` says which request the reply describes, the folded one
 * (the fold acted) or the unfolded one (shadow). The estimate is kept in
 * `estimate`.
 */
export function trueUpLedger(estimate: FoldLedger, reply: CacheBill, sent: 'folded' | 'unfolded', model: string, price: Price): FoldLedger {
  const unfolded = sent === 'folded' ? unfoldedFrom(reply, estimate) : reply;
  const folded = sent === 'folded' ? reply : foldedFrom(reply, estimate);
  const { cached_tokens_lost, cache_loss_usd, net_usd } = estimate;
  return {
    ...estimate,
    model,
    ...ledgerOf(unfolded, folded, price),
    trued_up: true,
    cache_write_tokens_added: folded.written - unfolded.written,
    reply,
    estimate: { cached_tokens_lost, cache_loss_usd, net_usd },
  };
}

/** A fold's figures in the stage's detail: the ledger, and the sums the row and the scorecard keep of it. */
export function ledgerFigures(ledger: FoldLedger) {
  return {
    usd_saved: ledger.usd_saved,
    ledger_usd: ledger.net_usd,
    estimated_ledger_usd: ledger.estimate?.net_usd ?? ledger.net_usd,
    ledger_trued_up: ledger.trued_up,
    ledger,
  };
}
