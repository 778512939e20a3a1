/**
 * An index from a word's first characters to the rules that can match
 * starting there, so a scan tries a handful of rules at each word instead of
 * every rule's leading alternation (V8 tries those one alternative after
 * another: most of the regex stage's time went there).
 *
 * The seven-character prefixes each rule can begin with are read off its
 * source by a small parser of the regex subset the rule table uses: literal
 * characters, classes, groups, alternation, the `?`, `*`, `+` and `{m,n}`
 * quantifiers, and zero-width assertions (`\b`, lookarounds), which only ever
 * narrow a match and are taken as matching anything here. The index may
 * offer a rule that then fails; it never leaves out one that could match.
 */

export type RuleNode =
  | { kind: 'chars'; chars: string }
  | { kind: 'seq'; items: RuleNode[] }
  | { kind: 'alt'; options: RuleNode[] }
  | { kind: 'repeat'; node: RuleNode; min: number; max: number }
  | { kind: 'empty' };

const EMPTY: RuleNode = { kind: 'empty' };
const DIGITS = '0123456789';
const SPACES = ' \t\n\r\f\v';

/** Parses `source` (the subset above); anything else throws, so a rule the index cannot read fails at load, not silently. */
export function parseRule(source: string): RuleNode {
  let at = 0;
  const fail = (why: string): never => {
    throw new Error(`rule-index: ${why} at ${at} in ${source}`);
  };
  const alternation = (): RuleNode => {
    const options = [sequence()];
    while (source[at] === '|') {
      at++;
      options.push(sequence());
    }
    return options.length === 1 ? options[0]! : { kind: 'alt', options };
  };
  const sequence = (): RuleNode => {
    const items: RuleNode[] = [];
    while (at < source.length && source[at] !== '|' && source[at] !== ')') items.push(quantified(atom()));
    return { kind: 'seq', items };
  };
  const group = (): RuleNode => {
    at++; // (
    let zeroWidth = false;
    if (source.startsWith('?:', at)) at += 2;
    else if (/^\?<?[=!]/.test(source.slice(at, at + 3))) {
      at += source[at + 1] === '<' ? 3 : 2;
      zeroWidth = true;
    } else if (source[at] === '?') fail('unsupported group');
    const inner = alternation();
    if (source[at++] !== ')') fail('unclosed group');
    return zeroWidth ? EMPTY : inner;
  };
  const charClass = (): RuleNode => {
    at++; // [
    if (source[at] === '^') fail('negated class');
    let chars = '';
    while (source[at] !== ']') {
      if (at >= source.length) fail('unclosed class');
      const from = source[at++]!;
      // an escape in a class (\s, \w) would be read as two literal characters and narrow the class: refused
      if (from === '\\') fail('escape in a class');
      if (source[at] === '-' && source[at + 1] !== ']') {
        const to = source[at + 1]!;
        at += 2;
        for (let c = from.charCodeAt(0); c <= to.charCodeAt(0); c++) chars += String.fromCharCode(c);
      } else chars += from;
    }
    at++; // ]
    return { kind: 'chars', chars };
  };
  const escape = (): RuleNode => {
    const c = source[at + 1];
    at += 2;
    if (c === 'b' || c === 'B') return EMPTY;
    if (c === 'd') return { kind: 'chars', chars: DIGITS };
    if (c === 's') return { kind: 'chars', chars: SPACES };
    if (c === undefined || /[a-zA-Z0-9]/.test(c)) fail(`unsupported escape \\${c}`);
    return { kind: 'chars', chars: c! };
  };
  const atom = (): RuleNode => {
    const c = source[at]!;
    if (c === '(') return group();
    if (c === '[') return charClass();
    if (c === '\\') return escape();
    if ('.^$*+?{'.includes(c)) fail(`unsupported ${c}`);
    at++;
    return { kind: 'chars', chars: c };
  };
  const quantified = (node: RuleNode): RuleNode => {
    const q = source[at];
    let min: number;
    let max: number;
    if (q === '?') [min, max] = [0, 1];
    else if (q === '*') [min, max] = [0, Infinity];
    else if (q === '+') [min, max] = [1, Infinity];
    else if (q === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(at));
      if (m === null) fail('bad {m,n}');
      min = Number(m![1]);
      max = m![2] === undefined ? min : m![3] === '' ? Infinity : Number(m![3]);
      at += m![0].length - 1;
    } else return node;
    at++;
    if (source[at] === '?') at++; // lazy: the same strings
    return { kind: 'repeat', node, min, max };
  };
  const node = alternation();
  if (at !== source.length) fail('unbalanced )');
  return node;
}

/**
 * The prefixes of up to `k` characters that begin a match of `node`, each as
 * the characters every position can hold (a class stays one position, so
 * `[a-z0-9]+` does not multiply the prefixes by 36 per character): one of
 * length `k` is a prefix, a shorter one a whole match.
 */
export function prefixes(node: RuleNode, k: number): Shape[] {
  return [...shapes(node, k).values()];
}

/** A prefix: the characters each position of it can hold. */
export type Shape = readonly string[];
/** prefixes by their positions joined with U+0000 (which no rule holds) */
type Shapes = Map<string, Shape>;
const START: Shapes = new Map([['', []]]);

function shapes(node: RuleNode, k: number): Shapes {
  if (k === 0) return START;
  switch (node.kind) {
    case 'empty':
      return START;
    case 'chars':
      return new Map([[node.chars, [node.chars]]]);
    case 'alt': {
      const out: Shapes = new Map();
      for (const option of node.options) for (const [key, shape] of shapes(option, k)) out.set(key, shape);
      return out;
    }
    case 'seq':
      return node.items.reduce((heads, item) => then(heads, item, k), START);
    case 'repeat': {
      let heads = START;
      const all: Shapes = new Map(node.min === 0 ? heads : []);
      // past min + k rounds every prefix is either k long or complete already
      for (let round = 1; round <= Math.min(node.max, node.min + k); round++) {
        heads = then(heads, node.node, k);
        if (round >= node.min) for (const [key, shape] of heads) all.set(key, shape);
      }
      return all;
    }
  }
}

function then(heads: Shapes, next: RuleNode, k: number): Shapes {
  const out: Shapes = new Map();
  for (const [key, head] of heads) {
    if (head.length === k) out.set(key, head);
    else for (const [tailKey, tail] of shapes(next, k - head.length)) out.set(key === '' ? tailKey : tailKey === '' ? key : `${key}\u0000${tailKey}`, [...head, ...tail]);
  }
  return out;
}

/** a code's class in a key: a-z 0-25, 0-9 26-35, anything else (space, a letter beyond ASCII, the end) 36 */
const CLASSES = 37;
const CLASS_OF = (() => {
  const table = new Uint8Array(128).fill(CLASSES - 1);
  for (let c = 97; c <= 122; c++) table[c] = c - 97;
  for (let c = 48; c <= 57; c++) table[c] = c - 48 + 26;
  return table;
})();
const classOf = (code: number) => (code < 128 ? CLASS_OF[code]! : CLASSES - 1);

/** JavaScript's word characters, the ones `\b` looks at */
const WORD = (() => {
  const table = new Uint8Array(128);
  for (const c of 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_') table[c.charCodeAt(0)] = 1;
  return table;
})();

/** One rule under one key: the characters it can go on with. */
interface Entry<T> {
  readonly tag: T;
  /** sticky: tried at one position */
  readonly re: RegExp;
  /** 1 at (i × CLASSES + class) for each class the character i places after the key can have in a match */
  readonly ahead: Uint8Array;
}

/** characters read by the key */
const KEY_CHARS = 3;
/**
 * characters after the key checked per rule before its regex is tried: most
 * words that begin a rule's phrase go on otherwise ("write to" against
 * "write out"), and a regex call costs far more than four lookups
 */
const AHEAD = 4;

/**
 * The rules by the three characters a word begins with, each with the
 * classes of the four characters after them it allows. Each rule's regex is
 * compiled sticky with a closing `\b`; a rule is tried only where a word
 * begins (as the `\b` before it required).
 */
export class RuleIndex<T> {
  private readonly byKey: (Entry<T>[] | undefined)[] = new Array(CLASSES ** KEY_CHARS);

  constructor(rules: readonly { source: string; tag: T }[]) {
    for (const { source, tag } of rules) {
      const re = new RegExp(`(?:${source})\\b`, 'y');
      // the characters after the key each prefix allows, gathered per key's positions before they are spread over that key's class sequences
      const groups = new Map<string, { shape: Shape; ahead: Uint8Array }>();
      for (const shape of prefixes(parseRule(source), KEY_CHARS + AHEAD)) {
        const first = shape[0];
        if (first === undefined || ![...first].every((c) => c.charCodeAt(0) < 128 && WORD[c.charCodeAt(0)] === 1)) throw new Error(`rule-index: a rule must begin with a word character: ${source}`);
        const keyPositions = shape.slice(0, KEY_CHARS).join('\u0000');
        let group = groups.get(keyPositions);
        if (group === undefined) groups.set(keyPositions, (group = { shape, ahead: new Uint8Array(AHEAD * CLASSES) }));
        for (let i = 0; i < AHEAD; i++) for (const c of classesAt(shape, KEY_CHARS + i)) group.ahead[i * CLASSES + c] = 1;
      }
      const entries = new Map<number, Entry<T>>();
      for (const { shape, ahead } of groups.values()) {
        for (const key of classSequences(shape, KEY_CHARS)) {
          let entry = entries.get(key);
          if (entry === undefined) {
            entries.set(key, (entry = { tag, re, ahead: new Uint8Array(AHEAD * CLASSES) }));
            (this.byKey[key] ??= []).push(entry);
          }
          for (let i = 0; i < ahead.length; i++) entry.ahead[i] = entry.ahead[i]! | ahead[i]!;
        }
      }
    }
  }

  /**
   * Calls `matched` with the tag of each rule that matches where a word of
   * `text` begins, and the position, until it returns true. Rules whose tag
   * is not `wanted` are not tried. `wordStarts`, when given, are where the
   * words begin (a folded view's, from fold): only those are visited.
   */
  scan(text: string, wanted: (tag: T) => boolean, matched: (tag: T, at: number) => boolean, wordStarts?: Int32Array): void {
    if (wordStarts !== undefined) {
      for (let i = 0; i < wordStarts.length; i++) if (this.tryAt(text, wordStarts[i]!, wanted, matched)) return;
      return;
    }
    let inWord = false;
    for (let p = 0; p < text.length; p++) {
      const c = text.charCodeAt(p);
      const word = c < 128 && WORD[c] === 1;
      if (word && !inWord && this.tryAt(text, p, wanted, matched)) return;
      inWord = word;
    }
  }

  /** Tries the rules under the key of the word beginning at `p`; true when `matched` said to stop. */
  private tryAt(text: string, p: number, wanted: (tag: T) => boolean, matched: (tag: T, at: number) => boolean): boolean {
    const entries = this.byKey[(classOf(text.charCodeAt(p)) * CLASSES + classOf(text.charCodeAt(p + 1))) * CLASSES + classOf(text.charCodeAt(p + 2))];
    if (entries === undefined) return false;
    for (const { tag, re, ahead } of entries) {
      if (!allows(ahead, text, p + KEY_CHARS) || !wanted(tag)) continue;
      re.lastIndex = p;
      if (re.test(text) && matched(tag, p)) return true;
    }
    return false;
  }
}

/** Can the characters of `text` from `at` on follow the key in a match of the entry's rule? */
function allows(ahead: Uint8Array, text: string, at: number): boolean {
  for (let i = 0; i < AHEAD; i++) if (ahead[i * CLASSES + classOf(text.charCodeAt(at + i))] === 0) return false;
  return true;
}

const ALL_CLASSES = Array.from({ length: CLASSES }, (_, c) => c);

/** the classes of each position's characters, read once: the same sets recur across thousands of prefixes */
const CLASSES_OF_CHARS = new Map<string, number[]>();

/** The classes position `i` of a prefix stands for: past a complete match's end comes anything. */
function classesAt(shape: Shape, i: number): number[] {
  const chars = shape[i];
  if (chars === undefined) return ALL_CLASSES;
  let classes = CLASSES_OF_CHARS.get(chars);
  if (classes === undefined) CLASSES_OF_CHARS.set(chars, (classes = [...new Set([...chars].map((c) => classOf(c.charCodeAt(0))))]));
  return classes;
}

/** The class sequences (as numbers) the first `n` positions of a prefix stand for. */
function classSequences(shape: Shape, n: number): number[] {
  let keys = [0];
  for (let i = 0; i < n; i++) {
    const classes = classesAt(shape, i);
    keys = keys.flatMap((k) => classes.map((c) => k * CLASSES + c));
  }
  return keys;
}
