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
const isWordCode = (c: number) => (c >= 97 && c <= 122) || (c >= 48 && c <= 57);

/** A word set by length and first character: a word of the text is looked up where it stands, without cutting it out as a string. */
type WordIndex = ReadonlyMap<number, readonly string[]>;
const headKey = (length: number, first: number) => length * 128 + first;
const INDEXES = new WeakMap<ReadonlySet<string>, WordIndex>();
function wordIndex(words: ReadonlySet<string>): WordIndex {
  let index = INDEXES.get(words);
  if (index === undefined) {
    const byHead = new Map<number, string[]>();
    for (const w of words) {
      const key = headKey(w.length, w.charCodeAt(0));
      byHead.set(key, [...(byHead.get(key) ?? []), w]);
    }
    INDEXES.set(words, (index = byHead));
  }
  return index;
}

/**
 * Does `text` hold one of `words` at `at`? A loop, not `words.some(…)`: the
 * closure that needs is made once per word looked up, a few thousand times on
 * a 32 KB body: about 430 KB of the 980 KB PII redaction allocated on the
 * bench's 32 KB body, the largest part.
 */
function startsWithAny(text: string, words: readonly string[], at: number): boolean {
  for (const w of words) if (text.startsWith(w, at)) return true;
  return false;
}

/**
 * The text read for context words: lowercased once, not once per value. Only
 * U+0130 lowercases to two code units (none to fewer), so when the lengths
 * agree every index still points at its own character; otherwise each window
 * is lowercased on its own, as before.
 */
class ContextText {
  private lowered: string | undefined;

  constructor(readonly text: string) {}

  /**
   * Is one of the last `last` words of text[from, to) in `words`? A word is a
   * run of a-z and 0-9 once lowercased; one cut by the window's edge is cut
   * there too.
   */
  has(words: ReadonlySet<string>, from: number, to: number, last = Infinity): boolean {
    this.lowered ??= this.text.toLowerCase();
    const lower = this.lowered;
    if (lower.length !== this.text.length) return this.text.slice(from, to).toLowerCase().match(WORD)?.slice(-last).some((w) => words.has(w)) ?? false;
    const index = wordIndex(words);
    // the words from the window's end back, each looked up in place
    let seen = 0;
    let end = to;
    for (let i = to - 1; i >= from - 1; i--) {
      if (i >= from && isWordCode(lower.charCodeAt(i))) continue;
      const start = i + 1;
      if (start < end) {
        const found = index.get(headKey(end - start, lower.charCodeAt(start)));
        if (found !== undefined && startsWithAny(lower, found, start)) return true;
        if (++seen >= last) return false;
      }
      end = i;
    }
    return false;
  }
}

function scored(r: Recognizer, context: ContextText, start: number, end: number): number {
  const { text } = context;
  let score = r.score(text.slice(start, end));
  if (score === 0) return 0;
  const from = Math.max(0, start - WINDOW_BEFORE);
  if (r.context !== undefined && (context.has(r.context, from, start) || context.has(r.context, end, Math.min(text.length, end + WINDOW_AFTER)))) score += CONTEXT_BOOST;
  if (r.against !== undefined && context.has(r.against, from, start, AGAINST_WORDS)) score -= AGAINST_PENALTY;
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
