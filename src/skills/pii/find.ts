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

const wordsIn = (s: string) => s.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w !== '');

function scored(r: Recognizer, text: string, start: number, end: number): number {
  let score = r.score(text.slice(start, end));
  if (score === 0) return 0;
  if (r.context !== undefined) {
    const near = [...wordsIn(text.slice(Math.max(0, start - WINDOW_BEFORE), start)), ...wordsIn(text.slice(end, end + WINDOW_AFTER))];
    if (near.some((w) => r.context!.has(w))) score += CONTEXT_BOOST;
  }
  if (r.against !== undefined) {
    const before = wordsIn(text.slice(Math.max(0, start - WINDOW_BEFORE), start)).slice(-AGAINST_WORDS);
    if (before.some((w) => r.against!.has(w))) score -= AGAINST_PENALTY;
  }
  return score;
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
  const kept: Finding[] = [];
  for (const c of candidates) if (!kept.some((k) => c.start < k.end && k.start < c.end)) kept.push(c);
  return kept.sort((a, b) => a.start - b.start);
}
