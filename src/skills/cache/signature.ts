import { hash } from 'node:crypto';
import type { NearSignature } from '../stage.js';

/**
 * The near-duplicate signature of one text and the similarity of two
 * signatures (docs/skills.md, Semantic cache, states the measure):
 *
 * - words: the NFKC-normalised, lower-cased text split into letter/digit runs;
 * - MinHash over the word 3-shingles with PERMUTATIONS permutations, whose
 *   matching share estimates the shingle sets' Jaccard index;
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

/** FNV-1a over UTF-16 code units, finalised */
function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return fmix32(h);
}

/** Fixed permutation parameters (a odd): the same in every thread and every replica, so signatures compare. */
const PERM_A = new Uint32Array(PERMUTATIONS);
const PERM_B = new Uint32Array(PERMUTATIONS);
for (let i = 0, s = 0x9e3779b9; i < PERMUTATIONS; i++) {
  s = fmix32(s + 0x6d2b79f5);
  PERM_A[i] = (s | 1) >>> 0;
  s = fmix32(s + 0x6d2b79f5);
  PERM_B[i] = s;
}

const WORD = /[\p{L}\p{N}]+(?:['’]\p{L}+)*/gu;

/** The words of an NFKC-normalised text, case kept (entities need it). */
export const wordsOf = (text: string): string[] => text.match(WORD) ?? [];

/** Shingles hashed between two looks at the deadline. */
const POLL_EVERY = 512;

function minhash(words: readonly string[], expired: () => boolean): Uint32Array | undefined {
  const out = new Uint32Array(PERMUTATIONS).fill(0xffffffff);
  // a text shorter than a shingle is one shingle of all its words
  const count = Math.max(1, words.length - SHINGLE + 1);
  for (let s = 0; s < count; s++) {
    if (s % POLL_EVERY === POLL_EVERY - 1 && expired()) return undefined;
    const h = hash32(words.slice(s, s + SHINGLE).join(' '));
    for (let i = 0; i < PERMUTATIONS; i++) {
      const v = fmix32((Math.imul(h, PERM_A[i] as number) + (PERM_B[i] as number)) >>> 0);
      if (v < (out[i] as number)) out[i] = v;
    }
  }
  return out;
}

function trigramVector(words: readonly string[]): Float32Array {
  const v = new Float32Array(VECTOR_DIM);
  const text = ` ${words.join(' ')} `;
  for (let i = 0; i + 3 <= text.length; i++) {
    const h = hash32(text.slice(i, i + 3));
    const cell = h & (VECTOR_DIM - 1);
    v[cell] = (v[cell] as number) + (h & 0x100 ? 1 : -1);
  }
  let norm = 0;
  for (const x of v) norm += x * x;
  norm = Math.sqrt(norm);
  if (norm > 0) for (let i = 0; i < VECTOR_DIM; i++) v[i] = (v[i] as number) / norm;
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
  const bare = words.map((w) => w.toLowerCase().replace(/['’]/g, ''));
  const negations = bare.filter((w, i) => NEGATIONS.has(w) || /n['’]t$/i.test(words[i] as string));
  const numbers = [...(text.match(NUMBER) ?? []), ...bare.filter((w) => NUMBER_WORDS.has(w))];
  const openers = sentenceStartIndexes(text);
  const entities = new Set<string>();
  for (const m of text.matchAll(WORD)) {
    const w = m[0];
    if (!/^\p{Lu}/u.test(w) || w === 'I') continue;
    if (openers.has(m.index) && SENTENCE_OPENERS.has(w.toLowerCase())) continue;
    entities.add(w);
  }
  return { negations: counted(negations), numbers: counted(numbers), entities: [...entities].sort().join(',') };
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
