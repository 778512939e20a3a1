import { hash } from 'node:crypto';
import type { NearSignature } from '../stage.js';

/**
 * The near-duplicate signature of one text and the similarity of two
 * signatures (docs/skills.md, Semantic cache, states the measure):
 *
 * - words: the NFKC-normalised, lower-cased text split into letter/digit runs;
 * - MinHash over the word 3-shingles in PERMUTATIONS positions (one hash per
 *   shingle, binned and densified), whose matching share estimates the
 *   shingle sets' Jaccard index;
 * - a signed, hashed character-trigram count vector of VECTOR_DIM cells,
 *   unit length, whose dot product is the cosine of the two texts' trigrams;
 * - similarity = min(Jaccard estimate, cosine): both views must agree.
 *
 * Building a signature grows with the text (worker side); comparing two is
 * fixed work (main thread side).
 */

export const PERMUTATIONS = 128;
export const VECTOR_DIM = 256;
/** LSH: BANDS bands of ROWS MinHash values; two texts share a band with probability ≈ 1-(1-J^8)^16 (≈1 at J 0.95, 6% at J 0.5) */
export const BANDS = 16;
const ROWS = PERMUTATIONS / BANDS;
const SHINGLE = 3;

/**
 * A short hex digest of parts joined by NUL (which no part is expected to
 * contain in a way that matters). One-shot `hash`: a Hash object per digest
 * cost more than the hashing of these short strings.
 */
export const digest = (...parts: readonly string[]): string => hash('sha256', parts.join('\0'), 'hex').slice(0, 32);

/** murmur3's 32-bit finaliser: a bijection on 32-bit integers that mixes every bit */
function fmix32(x: number): number {
  let h = x >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** one FNV-1a step: `h` with the code unit `c` mixed in */
const fnvStep = (h: number, c: number): number => Math.imul(h ^ c, FNV_PRIME);

/** FNV-1a over the UTF-16 code units of `s`, finalised */
function hash32(s: string): number {
  let h = FNV_OFFSET;
  for (let i = 0; i < s.length; i++) h = fnvStep(h, s.charCodeAt(i));
  return fmix32(h);
}

const WORD = /[\p{L}\p{N}]+(?:['’]\p{L}+)*/gu;

/** The words of an NFKC-normalised text, case kept (entities need it). */
export const wordsOf = (text: string): string[] => text.match(WORD) ?? [];

/** Shingles hashed between two looks at the deadline. */
const POLL_EVERY = 512;
/** bits of a shingle's hash that pick its bin (PERMUTATIONS = 2^BIN_BITS bins) */
const BIN_BITS = 7;
/** a seed that keeps a shingle's value in its bin independent of the bits that chose the bin */
const VALUE_SEED = 0x5bd1e995;

/**
 * One-permutation MinHash with optimal densification (Shrivastava, ICML
 * 2017): each shingle is hashed once; the hash's top bits pick one of the
 * PERMUTATIONS bins and the bin keeps the least value of its shingles. A bin
 * no shingle fell in borrows the value of the first filled bin along a fixed
 * probe sequence of its own, the same for every text, so two signatures agree
 * in a position with probability the Jaccard index, as with PERMUTATIONS
 * separate hash functions, for one hash per shingle instead of PERMUTATIONS.
 */
function minhash(words: readonly string[], expired: () => boolean): Uint32Array | undefined {
  const out = new Uint32Array(PERMUTATIONS).fill(0xffffffff);
  const filled = new Uint8Array(PERMUTATIONS);
  const wordHashes = new Uint32Array(words.length);
  for (let w = 0; w < words.length; w++) wordHashes[w] = hash32(words[w] as string);
  // a text shorter than a shingle is one shingle of all its words
  const count = Math.max(1, words.length - SHINGLE + 1);
  for (let s = 0; s < count; s++) {
    if (s % POLL_EVERY === POLL_EVERY - 1 && expired()) return undefined;
    let h = FNV_OFFSET;
    for (let k = s; k < s + SHINGLE && k < words.length; k++) h = Math.imul(h ^ (wordHashes[k] as number), FNV_PRIME);
    h = fmix32(h);
    const bin = h >>> (32 - BIN_BITS);
    const value = fmix32(h ^ VALUE_SEED);
    if (filled[bin] === 0 || value < (out[bin] as number)) out[bin] = value;
    filled[bin] = 1;
  }
  densify(out, filled);
  return out;
}

/** probes of an empty bin's sequence before the fallback to the next filled bin */
const PROBES = 4 * PERMUTATIONS;
const NEVER_PROBED = 0xffff;

/** the `attempt`th bin an empty bin probes for a donor */
const probeOf = (bin: number, attempt: number): number => fmix32(Math.imul(bin + 1, 0x9e3779b1) + attempt) & (PERMUTATIONS - 1);

/**
 * FIRST_PROBE[bin * PERMUTATIONS + target]: the attempt at which `bin`'s probe
 * sequence first reaches `target` (NEVER_PROBED if not within PROBES). The
 * sequences are the same for every text, so an empty bin's donor, the filled
 * bin its sequence reaches first, is the filled bin with the least entry here:
 * a few table reads per filled bin instead of walking the sequence, which
 * took ~PERMUTATIONS hashes per empty bin on a short text (one or two filled
 * bins) and made a two-word prompt's signature cost more than a long one's.
 */
const FIRST_PROBE = (() => {
  const table = new Uint16Array(PERMUTATIONS * PERMUTATIONS).fill(NEVER_PROBED);
  for (let bin = 0; bin < PERMUTATIONS; bin++) {
    for (let attempt = PROBES - 1; attempt >= 0; attempt--) table[bin * PERMUTATIONS + probeOf(bin, attempt)] = attempt;
  }
  return table;
})();

/** Fills each empty bin with the value of its donor: the first filled bin along its own probe sequence (then, rarely, the next filled bin). */
function densify(out: Uint32Array, filled: Uint8Array): void {
  const donors: number[] = [];
  for (let bin = 0; bin < PERMUTATIONS; bin++) if (filled[bin] === 1) donors.push(bin);
  if (donors.length === PERMUTATIONS) return;
  for (let bin = 0; bin < PERMUTATIONS; bin++) {
    if (filled[bin] === 1) continue;
    let donor = -1;
    let first = NEVER_PROBED;
    for (const target of donors) {
      const attempt = FIRST_PROBE[bin * PERMUTATIONS + target] as number;
      if (attempt < first) {
        first = attempt;
        donor = target;
      }
    }
    if (donor < 0) for (let step = 1; donor < 0; step++) if (filled[(bin + step) & (PERMUTATIONS - 1)] === 1) donor = (bin + step) & (PERMUTATIONS - 1);
    out[bin] = out[donor] as number;
  }
}

function trigramVector(words: readonly string[]): Float32Array {
  const counts = new Int32Array(VECTOR_DIM);
  const text = ` ${words.join(' ')} `;
  // each 3-character window hashed as it slides: one code unit read per window
  let a = text.charCodeAt(0);
  let b = text.charCodeAt(1);
  for (let i = 2; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const h = fmix32(fnvStep(fnvStep(fnvStep(FNV_OFFSET, a), b), c));
    counts[h & (VECTOR_DIM - 1)]! += h & 0x100 ? 1 : -1;
    a = b;
    b = c;
  }
  let norm = 0;
  for (let i = 0; i < VECTOR_DIM; i++) norm += (counts[i] as number) ** 2;
  norm = Math.sqrt(norm);
  const v = new Float32Array(VECTOR_DIM);
  if (norm > 0) for (let i = 0; i < VECTOR_DIM; i++) v[i] = (counts[i] as number) / norm;
  return v;
}

/** Words whose presence or count flips or narrows a request's meaning. */
const NEGATIONS = new Set(['not', 'no', 'never', 'none', 'nothing', 'nobody', 'nowhere', 'neither', 'nor', 'without', 'cannot', 'except', 'excluding', 'dont', 'doesnt', 'didnt', 'isnt', 'arent', 'wasnt', 'werent', 'cant', 'wont', 'shouldnt', 'wouldnt', 'couldnt', 'hasnt', 'havent', 'hadnt']);
const NUMBER_WORDS = new Set(
  'zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million billion trillion first second third fourth fifth sixth seventh eighth ninth tenth half twice double triple'.split(' '),
);
/** Capitalised only because they open a sentence (or "I"): not named entities. */
const SENTENCE_OPENERS = new Set(
  'a an the what which who whom whose when where why how is are was were do does did can could would should will shall may might must please i you we they he she it this that these those there here if and but or so in on at for to of with from by as my your our their let tell give write explain list describe show find make compare summarize summarise translate'.split(' '),
);
const NUMBER = /\d+(?:[.,:/]\d+)*/g;

const counted = (items: readonly string[]): string => {
  const m = new Map<string, number>();
  for (const x of items) m.set(x, (m.get(x) ?? 0) + 1);
  return [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, n]) => `${k}*${n}`).join(',');
};

/**
 * What a near-duplicate must share exactly with the stored turn: negation
 * words (with their counts), numbers (digits and number words, with counts)
 * and capitalised tokens that are not sentence openers (named entities).
 */
export function invariantsOf(text: string, words: readonly string[]): { negations: string; numbers: string; entities: string } {
  const bare = words.map(bareWord);
  const negations = bare.filter((w, i) => NEGATIONS.has(w) || NEGATED.test(words[i] as string));
  const numbers = [...(text.match(NUMBER) ?? []), ...bare.filter((w) => NUMBER_WORDS.has(w))];
  const openers = sentenceStartIndexes(text);
  const entities = new Set<string>();
  WORD.lastIndex = 0;
  for (let m = WORD.exec(text); m !== null; m = WORD.exec(text)) {
    const w = m[0];
    if (!startsUpper(w) || w === 'I') continue;
    if (openers.has(m.index) && SENTENCE_OPENERS.has(w.toLowerCase())) continue;
    entities.add(w);
  }
  return { negations: counted(negations), numbers: counted(numbers), entities: [...entities].sort().join(',') };
}

const NEGATED = /n['’]t$/i;
const APOSTROPHES = /['’]/g;
/** lower case, apostrophes dropped (the replace only where there is one: most words have none) */
function bareWord(w: string): string {
  const lower = w.toLowerCase();
  return lower.includes("'") || lower.includes('’') ? lower.replace(APOSTROPHES, '') : lower;
}

/** an upper-case first letter; ASCII answered without the Unicode property test */
function startsUpper(w: string): boolean {
  const c = w.charCodeAt(0);
  return c < 128 ? c >= 65 && c <= 90 : /^\p{Lu}/u.test(w);
}

/** Offsets of the first word of each sentence (text start, or after . ! ? or a line break). */
function sentenceStartIndexes(text: string): Set<number> {
  const out = new Set<number>();
  for (const m of text.matchAll(/(?:^|[.!?\n]\s*)([\p{L}\p{N}])/gu)) out.add((m.index ?? 0) + m[0].length - (m[1] as string).length);
  return out;
}

const NEVER = () => false;

/**
 * The signature of a last user turn; 'none' when it has no words, 'expired'
 * when `expired` said so while the MinHash was being built (a long turn).
 */
export function signatureOf(raw: string, context: { scope: string; preceding: string }, expired: () => boolean = NEVER): NearSignature | 'none' | 'expired' {
  const text = raw.normalize('NFKC');
  const words = wordsOf(text);
  if (words.length === 0) return 'none';
  const lower = words.map((w) => w.toLowerCase());
  const inv = invariantsOf(text, words);
  const invariants = digest(inv.negations, inv.numbers, inv.entities);
  const mh = minhash(lower, expired);
  if (mh === undefined) return 'expired';
  const bands: string[] = [];
  for (let b = 0; b < BANDS; b++) bands.push(digest(context.scope, context.preceding, invariants, String(b), mh.subarray(b * ROWS, (b + 1) * ROWS).join('.')));
  return { preceding: context.preceding, invariants, minhash: mh, vector: trigramVector(lower), bands };
}

/** Share of MinHash slots that agree: an unbiased estimate of the word-shingle Jaccard index. */
export function jaccardEstimate(a: Uint32Array, b: Uint32Array): number {
  let same = 0;
  for (let i = 0; i < PERMUTATIONS; i++) if (a[i] === b[i]) same++;
  return same / PERMUTATIONS;
}

export function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  for (let i = 0; i < VECTOR_DIM; i++) dot += (a[i] as number) * (b[i] as number);
  return Math.min(1, dot);
}

type Comparable = Pick<NearSignature, 'minhash' | 'vector'>;

/** The documented similarity: the lower of the Jaccard estimate and the trigram cosine. */
export const similarity = (a: Comparable, b: Comparable): number => Math.min(jaccardEstimate(a.minhash, b.minhash), cosine(a.vector, b.vector));
