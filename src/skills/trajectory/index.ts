import type { FoldParams } from '../../tenancy/skills.js';
import type { Deadline, StageInput, StageResult } from '../stage.js';
import { textTokens } from '../tokens.js';
import { stageView } from '../views/index.js';
import { isObj, type TextPart } from '../views/view.js';
import { foldLedger, ledgerFigures, type PrefixTokens } from './ledger.js';
import { SummaryLines } from './summary.js';

/**
 * agent_trajectory_compaction: in a conversation with tool calls, folds the
 * older turns, from the first tool call up to the last `keep_recent_turns`
 * turns, into one user turn carrying an extractive summary (./summary.ts),
 * when that saves at least `min_fold_tokens` and at most `max_fold_ratio` of
 * the prompt (o200k tokens of its text). The fold range never splits a tool
 * call from its result (the view refuses such a fold; a shorter range is
 * tried) and never takes in system instructions. Each fold's dollar ledger
 * (./ledger.ts) is in the detail, an estimate that accounting trues up from
 * the reply's cache usage (./true-up.ts); `ledger_usd` is its net.
 */

export const FOLD_DEFAULTS: Required<FoldParams> = { min_fold_tokens: 2000, keep_recent_turns: 4, max_fold_ratio: 0.5 };

/** shapes whose prompt cache is marked inline (`cache_control`, `cachePoint`); the others cache prefixes by themselves */
const MARKER_SHAPES = new Set(['messages', 'converse']);

const skipped = (reason: string, extra: Record<string, unknown> = {}): StageResult => ({ outcome: 'skipped', detail: { reason, tokens_saved: 0, ...extra } });

function params(given: FoldParams | undefined): Required<FoldParams> {
  const p = { ...FOLD_DEFAULTS, ...given };
  return { min_fold_tokens: Math.max(0, p.min_fold_tokens), keep_recent_turns: Math.max(0, Math.floor(p.keep_recent_turns)), max_fold_ratio: Math.min(1, Math.max(0, p.max_fold_ratio)) };
}

function namedModel(input: StageInput): string | undefined {
  const root = input.json();
  if (!isObj(root)) return input.context?.model;
  const holder = input.surface === 'execute' ? root['target'] : root;
  const model = isObj(holder) ? holder['model'] : undefined;
  return typeof model === 'string' ? model : input.context?.model;
}

/** tokens per turn (index = turn) and of the system text outside the turns */
function turnTokens(parts: readonly TextPart[], turns: number) {
  const perTurn = new Array<number>(turns).fill(0);
  const counts = parts.map((p) => textTokens(p.text));
  let system = 0;
  parts.forEach((p, i) => {
    if (p.turn < 0) system += counts[i]!;
    else perTurn[p.turn] = (perTurn[p.turn] ?? 0) + counts[i]!;
  });
  const marked = parts.reduce((n, p, i) => (p.cacheMarked ? n + counts[i]! : n), 0);
  return { perTurn, system, marked, prompt: counts.reduce((a, b) => a + b, 0) };
}

export function evaluateTrajectoryCompaction(input: StageInput, deadline: Deadline): StageResult {
  const viewed = stageView(input);
  if ('reason' in viewed) return skipped(viewed.reason);
  const { view } = viewed;
  const parts = view.parts();
  const turns = view.turnCount();
  const p = params(input.context?.foldParams);
  const start = parts.find((x) => x.kind === 'tool_call')?.turn;
  if (start === undefined) return skipped('no tool calls');
  // system instructions inside the turns (chat `system`/`developer` messages) are never folded
  const firstSystem = parts.find((x) => x.kind === 'system' && x.turn >= start)?.turn ?? turns;
  const endMax = Math.min(turns - p.keep_recent_turns, firstSystem);
  if (endMax <= start) return skipped(`no tool turns older than the last ${p.keep_recent_turns}`);
  const t = turnTokens(parts, turns);
  const detail = { prompt_tokens: t.prompt, params: p };
  const inRange = (from: number, to: number) => parts.filter((x) => x.turn >= from && x.turn < to);
  const lines = new SummaryLines(inRange(start, endMax));
  let rangeTokens = t.perTurn.slice(start, endMax).reduce((a, b) => a + b, 0);
  for (let end = endMax; end > start; end--) {
    if (deadline.expired()) return { outcome: 'ceiling_exceeded', detail: { reason: 'deadline passed while choosing the fold' } };
    if (end < endMax) rangeTokens -= t.perTurn[end]!;
    // a shorter range removes no more than this one
    if (rangeTokens < p.min_fold_tokens) break;
    const count = lines.parts.filter((x) => x.turn < end).length;
    const estimate = rangeTokens - lines.tokens(0, count);
    if (estimate < p.min_fold_tokens || estimate > p.max_fold_ratio * t.prompt) continue;
    const summary = lines.text(0, count, end - start);
    if (!view.fold(start, end, summary)) continue;
    const tokensSaved = rangeTokens - textTokens(summary);
    const prefix: PrefixTokens = {
      beforeFold: t.system + t.perTurn.slice(0, start).reduce((a, b) => a + b, 0),
      marked: MARKER_SHAPES.has(input.surface) ? t.marked : undefined,
      previousRequest: t.prompt - (t.perTurn[turns - 1] ?? 0),
    };
    const ledger = foldLedger(namedModel(input), tokensSaved, prefix);
    const folded = { folded_turns: end - start, tool_calls_folded: lines.parts.slice(0, count).filter((x) => x.kind === 'tool_call').length };
    const body = view.serialize();
    const money = ledger === undefined ? { ledger: { tokens_saved: tokensSaved, priced: false } } : ledgerFigures(ledger);
    return { outcome: 'applied', detail: { ...detail, ...folded, tokens_saved: tokensSaved, bytes_saved: input.body.byteLength - body.byteLength, ...money }, change: { body } };
  }
  return skipped(`no fold saves between ${p.min_fold_tokens} tokens and ${p.max_fold_ratio} of the prompt`, detail);
}
