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

/**
 * The text read for context words: lowercased once, not once per value. Only
 * U+0130 lowercases to two code units (none to fewer), so when the lengths
 * agree every index still points at its own character; otherwise each window
 * is lowercased on its own, as before.
 */
class ContextText {
  private lowered: string | undefined;

  constructor(readonly text: string) {}

  /** the words of text[from, to), lowercased: a word cut by the window's edge is cut there too */
  words(from: number, to: number): string[] {
    this.lowered ??= this.text.toLowerCase();
    const lower = this.lowered;
    if (lower.length !== this.text.length) return this.text.slice(from, to).toLowerCase().match(WORD) ?? [];
    // the runs of WORD's characters, read in a loop: an exec per word cost a match array each
    const out: string[] = [];
    let start = -1;
    for (let i = from; i < to; i++) {
      const c = lower.charCodeAt(i);
      if ((c >= 97 && c <= 122) || (c >= 48 && c <= 57)) {
        if (start < 0) start = i;
      } else if (start >= 0) {
        out.push(lower.slice(start, i));
        start = -1;
      }
    }
    if (start >= 0) out.push(lower.slice(start, to));
    return out;
  }
}

function scored(r: Recognizer, context: ContextText, start: number, end: number): number {
  const { text } = context;
  let score = r.score(text.slice(start, end));
  if (score === 0) return 0;
  if (r.context === undefined && r.against === undefined) return score;
  const before = context.words(Math.max(0, start - WINDOW_BEFORE), start);
  if (r.context !== undefined) {
    const near = (w: string) => r.context!.has(w);
    if (before.some(near) || context.words(end, Math.min(text.length, end + WINDOW_AFTER)).some(near)) score += CONTEXT_BOOST;
  }
  if (r.against !== undefined && before.slice(-AGAINST_WORDS).some((w) => r.against!.has(w))) score -= AGAINST_PENALTY;
  return score;
}

/** each recognizer's pattern, sticky: tried at one start only (the anchored scan) */
const STICKY = new WeakMap<RegExp, RegExp>();
const stickyOf = (re: RegExp): RegExp => {
  let sticky = STICKY.get(re);
  if (sticky === undefined) STICKY.set(re, (sticky = new RegExp(re.source, `${re.flags.replace('g', '')}y`)));
  return sticky;
};

/**
 * Calls `found` with each match of `r.pattern` in `text`, in order, as its
 * global exec loop finds them. With an anchor only the starts it allows
 * before each anchor match are tried: a start further back has its anchor
 * match further back too, where it was tried already.
 */
function eachMatch(r: Recognizer, text: string, found: (start: number, end: number) => void): void {
  if (r.anchor === undefined) {
    r.pattern.lastIndex = 0;
    for (let m = r.pattern.exec(text); m !== null; m = r.pattern.exec(text)) found(m.index, m.index + m[0].length);
    return;
  }
  const { pattern: anchor } = r.anchor;
  const startOf = 'startOf' in r.anchor ? r.anchor.startOf : undefined;
  const reach = 'reach' in r.anchor ? r.anchor.reach : 0;
  const sticky = stickyOf(r.pattern);
  // no match starts before `from`: the end of the last one
  let from = 0;
  anchor.lastIndex = 0;
  for (let a = anchor.exec(text); a !== null; a = anchor.exec(text)) {
    anchor.lastIndex = a.index + 1;
    const last = startOf === undefined ? a.index : startOf(text, a.index);
    const first = startOf === undefined ? a.index - reach : last;
    for (let start = Math.max(from, first); start <= last; start++) {
      sticky.lastIndex = start;
      const m = sticky.exec(text);
      if (m === null) continue;
      from = start + m[0].length;
      anchor.lastIndex = from;
      found(start, from);
      break;
    }
  }
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
  const context = new ContextText(text);
  for (const r of recognizers) {
    eachMatch(r, text, (start, end) => {
      const score = scored(r, context, start, end);
      if (score >= THRESHOLD) candidates.push({ kind: r.kind, start, end, score });
    });
  }
  // when no candidate overlaps another, all of them stand (each recognizer's are in text order, so this sort merges runs)
  const inText = [...candidates].sort((a, b) => a.start - b.start);
  if (inText.every((c, i) => i === 0 || (inText[i - 1] as Finding).end <= c.start)) return inText;
  candidates.sort((a, b) => b.score - a.score || b.end - b.start - (a.end - a.start));
  // kept in text order as it grows: a candidate is checked against its neighbour, not every value kept (a 32 KB body holds hundreds)
  const kept: Finding[] = [];
  for (const c of candidates) {
    const at = slotFor(kept, c);
    if (at >= 0) kept.splice(at, 0, c);
  }
  return kept;
}
