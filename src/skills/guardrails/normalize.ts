/**
 * Turns caller text into the views the guardrail stages scan: one folded view
 * of the text itself, plus one per encoded or hidden segment that decodes to
 * text (base64, hex, %-encoding, Unicode tag characters, rot13 or reversed text
 * when the prompt asks for them). A folded view is lowercase letters and
 * digits separated by single spaces, with look-alike characters, leetspeak and
 * spaced-out letters undone, so the patterns and the classifier see "ignore"
 * however it was typed.
 */

export interface Deadline {
  expired(): boolean;
}

/** Work bounds per evaluation: base64, hex and %-decoding never yield more than this much text (the other views are each at most the text's size). */
export interface ScanBudget {
  readonly deadline: Deadline;
  /** characters of decoded text still allowed */
  decodedChars: number;
}

/** Decoded text is probed again, so base64 inside base64 is seen; no deeper. */
const MAX_DECODE_DEPTH = 2;
export const DECODED_CHARS_PER_EVALUATION = 16 * 1024;
/** A run longer than this is probed on its head only (a pasted blob is not a prompt). */
const MAX_RUN_CHARS = 4096;

// Zero-width characters, joiners, bidi controls, soft hyphen, variation selectors, fillers, tag
// characters and the BOM: invisible characters that split a word for a matcher, not for a model.
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/gu;
// Unicode tag characters U+E0020..E007E mirror printable ASCII and render as nothing ("ASCII smuggling").
const TAG_RUN = /(?:\uDB40[\uDC20-\uDC7E]){4,}/g;
const NOT_ASCII = /[\u0080-\uFFFF]/;

const LEET: Readonly<Record<string, string>> = { '0': 'o', '1': 'i', '3': 'e', '4': 'a', '5': 's', '7': 't', '@': 'a', $: 's' };

/** Marks a character folded away without leaving a separator. */
const APOSTROPHE = 1;
const APOSTROPHES = new Set([0x2019, 0x02bc, 0x2018]);

/** Folding of one ASCII code: letter lowercased, leet digit or symbol to its letter, anything else a separator (0). */
const ASCII_FOLD = (() => {
  const table = new Uint16Array(128);
  for (let c = 48; c <= 57; c++) table[c] = c;
  for (let c = 97; c <= 122; c++) table[c] = c;
  for (let c = 65; c <= 90; c++) table[c] = c + 32;
  for (const [from, to] of Object.entries(LEET)) table[from.charCodeAt(0)] = to.charCodeAt(0);
  table[39] = APOSTROPHE; // "don't" reads "dont"
  return table;
})();

// Cyrillic and Greek letters that look like Latin ones, as used to dodge word filters.
const HOMOGLYPHS = new Map<number, number>(
  Object.entries({
    а: 'a', в: 'b', е: 'e', ё: 'e', к: 'k', м: 'm', н: 'h', о: 'o', р: 'p', с: 'c', т: 't', у: 'y', х: 'x',
    і: 'i', ї: 'i', ј: 'j', ѕ: 's', ԁ: 'd', ԛ: 'q', ԝ: 'w', һ: 'h', ӏ: 'l',
    α: 'a', β: 'b', ε: 'e', η: 'n', ι: 'i', κ: 'k', ν: 'v', ο: 'o', ρ: 'p', τ: 't', υ: 'u', χ: 'x', ω: 'w',
    ı: 'i', ɡ: 'g', ℓ: 'l',
  }).map(([from, to]) => [from.codePointAt(0)!, to.charCodeAt(0)]),
);
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;

/** NFKC (fullwidth and styled letters to plain ones), then every invisible character removed. */
export function clean(text: string): string {
  if (!NOT_ASCII.test(text)) return text;
  return text.normalize('NFKC').replace(INVISIBLE, '');
}

/** Folding of one character beyond ASCII (its code point): a letter or digit lowercased, a look-alike undone, a separator (0) or dropped (APOSTROPHE). */
function foldWide(cp: number): number {
  const ch = String.fromCodePoint(cp);
  const lower = ch.toLowerCase();
  const mapped = HOMOGLYPHS.get(lower.codePointAt(0)!);
  if (mapped !== undefined) return mapped;
  if (APOSTROPHES.has(cp)) return APOSTROPHE;
  // an astral letter, or one whose lowercase is longer, separates: a folded view holds one code unit per character
  if (LETTER_OR_DIGIT.test(ch) && lower.length === 1 && cp <= 0xffff) return lower.charCodeAt(0);
  return 0;
}

/** Characters of a base64 run (hex digits are among them). */
const BASE64_CHAR = (() => {
  const table = new Uint8Array(128);
  for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-') table[c.charCodeAt(0)] = 1;
  return table;
})();
/** base64 characters in a row that make a base64 or hex candidate */
const MIN_ENCODED_RUN = 16;

/** the folded text as UTF-16LE bytes, each code written low byte first (so no platform byte order is involved) */
let scratch = Buffer.alloc(8192);
/** where each word of the folded text begins, as fold writes them */
let starts = new Int32Array(4096);
/** texts up to this many characters have their word starts noted: the array above stays at most 4 MB, and a longer text is scanned character by character */
export const NOTED_MAX_CHARS = 1 << 20;

/** What fold notes on its way through a text. */
export interface FoldNotes {
  /** the text holds a run of base64 characters long enough to decode */
  encodedRun: boolean;
  /**
   * where the folded text's words begin, when it is ASCII letters and digits
   * with one space between words (no letter beyond ASCII, no spaced letters
   * joined) and the text at most NOTED_MAX_CHARS long: there, and only
   * there, a word character follows a non-word one
   */
  wordStarts?: Int32Array;
}

/** One text the guardrails scan, and where its words begin when that is known (FoldNotes). */
export interface View {
  readonly text: string;
  readonly wordStarts?: Int32Array;
}

/** The views as the one text the classifier reads. */
export const joinedViews = (views: readonly View[]): string => views.map((view) => view.text).join(' ');

/**
 * The folded view: lowercase, look-alikes and leet undone, every run of
 * non-letters one space, and runs of single letters ("i g n o r e") joined.
 * Input must be `clean`ed. O(length): one pass of table lookups (the rare
 * character beyond ASCII folded on its own), read back as one string. It
 * notes on the way whether four single characters stand in a row, so the
 * spaced-letters pass runs only on the rare text that has them, and, in
 * `seen`, whether the text holds a run of base64 characters long enough to
 * decode (ordinary prose has none, and its scan then skips the base64 and
 * hex patterns: their lookarounds cost more per character than this pass)
 * and where its words begin, so the rule scan visits those alone instead of
 * every character again.
 */
export function fold(text: string, seen?: FoldNotes): string {
  if (scratch.length < 2 * text.length) scratch = Buffer.alloc(4 * text.length);
  // word starts are noted only for a caller that reads them (scanViews' first view), and for texts within the bound
  const noting = seen !== undefined && text.length <= NOTED_MAX_CHARS;
  // words take a character and a space each, so at most half the text's length, and one
  if (noting && starts.length <= text.length >> 1) starts = new Int32Array(text.length + 2);
  const out = scratch;
  let words = 0;
  let wide = false; // a letter beyond ASCII was written
  let at = 0; // bytes written
  let space = true; // a separator is pending or written (or at start): the next kept character begins a word
  let wordLength = 0;
  let singles = 0; // single-character words in a row, the current one included once it ends
  let spaced = false;
  let run = 0; // base64 characters in a row, up to here
  let encodedRun = false;
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c < 128) {
      run = BASE64_CHAR[c] === 1 ? run + 1 : 0;
      if (run >= MIN_ENCODED_RUN) encodedRun = true;
      c = ASCII_FOLD[c]!;
    } else {
      run = 0;
      const cp = text.codePointAt(i)!;
      if (cp > 0xffff) i++;
      c = foldWide(cp);
      if (c > 0x7f) wide = true;
    }
    if (c === APOSTROPHE) continue;
    if (c === 0) {
      if (!space) {
        out[at++] = 32;
        out[at++] = 0;
        space = true;
        singles = wordLength === 1 ? singles + 1 : 0;
        if (singles >= 4) spaced = true;
      }
      continue;
    }
    if (space) {
      wordLength = 0;
      if (noting) starts[words++] = at >> 1;
    }
    out[at++] = c & 0xff;
    out[at++] = c >> 8;
    wordLength++;
    space = false;
  }
  if (!space && wordLength === 1 && singles >= 3) spaced = true;
  // a trailing separator
  if (at > 0 && out[at - 2] === 32 && out[at - 1] === 0) at -= 2;
  const folded = out.toString('utf16le', 0, at);
  const joined = spaced ? joinSpacedLetters(folded) : folded;
  if (seen !== undefined) {
    seen.encodedRun = encodedRun;
    seen.wordStarts = !noting || wide || joined !== folded ? undefined : starts.slice(0, words);
  }
  return joined;
}

// Four or more single characters in a row, each followed by one space: "i g n o r e".
const SPACED_LETTERS = /(?<![^ ])(?:[^ ] ){3,}[^ ](?![^ ])/g;

function joinSpacedLetters(folded: string): string {
  if (!SPACED_LETTERS.test(folded)) return folded;
  SPACED_LETTERS.lastIndex = 0;
  return folded.replace(SPACED_LETTERS, (run) => run.replaceAll(' ', ''));
}

// Candidate encoded runs. Base64 needs both cases, which keeps ordinary long words out.
const BASE64_RUN = /(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,}={0,2}/g;
const UPPER = /[A-Z]/;
const LOWER = /[a-z]/;
const HEX_RUN = /(?<![0-9A-Za-z])(?:[0-9A-Fa-f]{2}){8,}(?![0-9A-Za-z])/g;
const PERCENT_RUN = /(?:%[0-9A-Fa-f]{2}[^%\s]{0,2}){4,}/g;
const ASKS_ROT13 = /rot[\s-]?13/i;
const ASKS_REVERSED = /revers|backwards/i;

/** Does the decoded text read as text (not binary noise)? */
function isText(decoded: string): boolean {
  if (decoded.length < 4) return false;
  let readable = 0;
  for (let i = 0; i < decoded.length; i++) {
    const c = decoded.charCodeAt(i);
    if ((c >= 32 && c < 127) || c === 10 || c === 13 || c === 9 || (c >= 0xa0 && c !== 0xfffd)) readable++;
  }
  return readable / decoded.length >= 0.9;
}

/** rot13 of one byte: ASCII letters turned 13 places, every other byte as it is. */
const ROT13 = (() => {
  const table = new Uint8Array(256).map((_, c) => c);
  for (let i = 0; i < 26; i++) {
    table[65 + i] = 65 + ((i + 13) % 26);
    table[97 + i] = 97 + ((i + 13) % 26);
  }
  return table;
})();

/**
 * The text with its ASCII letters rot13'd, through a byte table over its
 * UTF-16LE code units (one below 256 has a zero high byte): a callback per
 * letter cost 3-4 ms on a 32 KB prompt that merely mentions rot13.
 */
function rot13(text: string): string {
  const units = Buffer.from(text, 'utf16le');
  for (let i = 0; i < units.length; i += 2) if (units[i + 1] === 0) units[i] = ROT13[units[i]!]!;
  return units.toString('utf16le');
}

/**
 * A folded view read backwards: folding the reversed text gives the same,
 * since folding works one character at a time and treats a run of separators
 * alike from either end, so this costs one copy instead of a second fold. (One
 * difference: a combining mark left over after NFKC stays a separator here,
 * where in reversed text it could compose with the letter it did not follow.)
 * A folded view holds no surrogate pairs (fold turns astral characters into
 * separators), so reversing its code units reverses its characters.
 */
function reversedView(folded: string): string {
  // reversing UTF-16LE bytes reverses the units and the bytes in each; swap16 puts the bytes back
  return Buffer.from(folded, 'utf16le').reverse().swap16().toString('utf16le');
}

/** Encoded segments of `text` that decode to text, within the budget; `encodedRuns`: fold found a base64-length run in it. */
function decodedSegments(text: string, budget: ScanBudget, encodedRuns: boolean): string[] {
  const found: string[] = [];
  const take = (decoded: string) => {
    if (budget.decodedChars <= 0 || !isText(decoded)) return;
    const kept = decoded.slice(0, budget.decodedChars);
    budget.decodedChars -= kept.length;
    found.push(kept);
  };
  for (const [run] of encodedRuns ? text.matchAll(BASE64_RUN) : []) {
    if (budget.decodedChars <= 0 || budget.deadline.expired()) return found;
    if (!UPPER.test(run) || !LOWER.test(run)) continue;
    const head = run.length > MAX_RUN_CHARS ? run.slice(0, MAX_RUN_CHARS) : run;
    take(Buffer.from(head, 'base64').toString('utf8'));
  }
  for (const [run] of encodedRuns ? text.matchAll(HEX_RUN) : []) {
    if (budget.decodedChars <= 0 || budget.deadline.expired()) return found;
    take(Buffer.from(run.slice(0, MAX_RUN_CHARS), 'hex').toString('utf8'));
  }
  if (text.includes('%')) {
    for (const [run] of text.matchAll(PERCENT_RUN)) {
      if (budget.decodedChars <= 0) return found;
      take(Buffer.from(run.slice(0, MAX_RUN_CHARS).replace(/%([0-9A-Fa-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16))), 'latin1').toString('utf8'));
    }
  }
  return found;
}

/** Text hidden in Unicode tag characters, read back as the ASCII it mirrors. */
function tagText(text: string): string[] {
  const runs: string[] = [];
  for (const [run] of text.matchAll(TAG_RUN)) {
    let ascii = '';
    for (let i = 1; i < run.length; i += 2) ascii += String.fromCharCode(run.charCodeAt(i) - 0xdc00);
    runs.push(ascii);
  }
  return runs;
}

/**
 * Every folded view of `text` to scan: the text itself first, then what its
 * hidden and encoded segments say. Bounded by the budget and the deadline.
 */
export function scanViews(text: string, budget: ScanBudget, depth = 0): View[] {
  const nonAscii = NOT_ASCII.test(text);
  const hidden = nonAscii ? tagText(text) : [];
  const cleaned = nonAscii ? clean(text) : text;
  const seen: FoldNotes = { encodedRun: false };
  const folded = fold(cleaned, seen);
  const views: View[] = [{ text: folded, wordStarts: seen.wordStarts }];
  for (const t of hidden) views.push({ text: fold(clean(t)) });
  if (ASKS_ROT13.test(cleaned)) views.push({ text: fold(clean(rot13(cleaned))) });
  if (ASKS_REVERSED.test(cleaned)) views.push({ text: reversedView(folded) });
  if (depth < MAX_DECODE_DEPTH) {
    for (const decoded of decodedSegments(cleaned, budget, seen.encodedRun)) views.push(...scanViews(decoded, budget, depth + 1));
  }
  return views;
}
