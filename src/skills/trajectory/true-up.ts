import { lookupModel, pricedModel } from '../../providers/catalog.js';
import type { ProviderId, Usage } from '../../providers/types.js';
import { ledgerFigures, trueUpLedger, type FoldLedger } from './ledger.js';

const FOLD_SKILL = 'agent_trajectory_compaction';

/** A skill stage's report as the exchange keeps it. */
interface Report {
  readonly skill: string;
  readonly outcome: string;
  readonly detail?: Readonly<Record<string, unknown>>;
}

/** What the reply says about the call: the vendor's usage as its provider read it, the model asked for, who served it. */
export interface ReplyUsage {
  usage: Usage | undefined;
  model: string | undefined;
  provider: ProviderId | 'none';
}

/** an estimated ledger as the fold's detail carries it (its report crossed from a pool thread as plain data) */
function estimateIn(detail: Readonly<Record<string, unknown>> | undefined): FoldLedger | undefined {
  const l = detail?.['ledger'] as Partial<FoldLedger> | undefined;
  return typeof l === 'object' && l !== null && l.trued_up === false && typeof l.net_usd === 'number' ? (l as FoldLedger) : undefined;
}

/**
 * The reports with the fold's ledger trued up from the reply's cache usage
 * (./ledger.ts trueUpLedger), or the same array when there is nothing to true
 * up: no fold (acting, or a shadow decision to fold) with a priced ledger, no
 * usage read from the vendor, a reply that does not say what came from the
 * cache, or a self-hosted server (no prompt-cache prices). Priced at the
 * served model's catalog prices (the ledger's model when the catalog does not
 * know it). Runs once per request, and does work only when a fold happened.
 */
export function trueUpFolds<R extends Report>(reports: readonly R[], reply: ReplyUsage): readonly R[] {
  const i = reports.findIndex((r) => r.skill === FOLD_SKILL);
  const report = reports[i];
  const estimate = estimateIn(report?.detail);
  if (report === undefined || estimate === undefined) return reports;
  const sent = report.outcome === 'applied' ? 'folded' : report.outcome === 'shadow' && report.detail?.['decision'] === 'applied' ? 'unfolded' : undefined;
  const { usage } = reply;
  if (sent === undefined || usage === undefined || usage.cache_unreported === true || reply.provider === 'selfhosted') return reports;
  const entry = lookupModel(pricedModel(reply.model, usage)) ?? lookupModel(estimate.model);
  if (entry === undefined) return reports;
  const bill = { input: usage.input_tokens, read: usage.cached_tokens, written: usage.cache_write_tokens ?? 0 };
  const ledger = trueUpLedger(estimate, bill, sent, entry.id, entry.price);
  const out = reports.slice();
  out[i] = { ...report, detail: { ...report.detail, ...ledgerFigures(ledger) } };
  return out;
}
