import { AGAINST_PENALTY, CONTEXT_BOOST, RECOGNIZERS, THRESHOLD, type PiiKind, type Recognizer } from './recognizers.js';

export interface Finding {
  kind: PiiKind;
  start: number;
  end: number;
  score: number;
}

/** characters read on each side of a value for context words */
const WINDOW_BEFORE = 48;
const WINDOW_AFTER = 24;
/** how many words just before a value can say it is something else */
const AGAINST_WORDS = 3;

const WORD = /[a-z0-9]+/g;
const wordsIn = (s: string): string[] => s.toLowerCase().match(WORD) ?? [];

function scored(r: Recognizer, text: string, start: number, end: number): number {
  let score = r.score(text.slice(start, end));
  if (score === 0) return 0;
  if (r.context === undefined && r.against === undefined) return score;
  const before = wordsIn(text.slice(Math.max(0, start - WINDOW_BEFORE), start));
  if (r.context !== undefined) {
    const near = (w: string) => r.context!.has(w);
    if (before.some(near) || wordsIn(text.slice(end, end + WINDOW_AFTER)).some(near)) score += CONTEXT_BOOST;
  }
  if (r.against !== undefined && before.slice(-AGAINST_WORDS).some((w) => r.against!.has(w))) score -= AGAINST_PENALTY;
  return score;
}

/**
 * Where `c` would go among `kept` (disjoint, in text order), or -1 when it
 * overlaps one of them. Disjoint intervals in start order are in end order
 * too, so only the last one starting before `c` ends can reach into it.
 */
function slotFor(kept: readonly Finding[], c: Finding): number {
  let lo = 0;
  let hi = kept.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((kept[mid] as Finding).start < c.end) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && (kept[lo - 1] as Finding).end > c.start ? -1 : lo;
}

/**
 * Every value in `text` that reaches the threshold, in text order, without
 * overlaps: where two candidates overlap the higher score wins, then the longer.
 */
export function findPii(text: string, recognizers: readonly Recognizer[] = RECOGNIZERS): Finding[] {
  const candidates: Finding[] = [];
  for (const r of recognizers) {
    r.pattern.lastIndex = 0;
    for (let m = r.pattern.exec(text); m !== null; m = r.pattern.exec(text)) {
      const start = m.index;
      const end = start + m[0].length;
      const score = scored(r, text, start, end);
      if (score >= THRESHOLD) candidates.push({ kind: r.kind, start, end, score });
    }
  }
  candidates.sort((a, b) => b.score - a.score || b.end - b.start - (a.end - a.start));
  // kept in text order as it grows: a candidate is checked against its neighbour, not every value kept (a 32 KB body holds hundreds)
  const kept: Finding[] = [];
  for (const c of candidates) {
    const at = slotFor(kept, c);
    if (at >= 0) kept.splice(at, 0, c);
  }
  return kept;
}
