/**
 * Hashed features of a folded text (see normalize.ts) for the injection
 * classifier: character n-grams over the text with word edges marked, and word
 * n-grams, each hashed (FNV-1a) into a fixed number of buckets with a sign bit
 * (so collisions cancel out on average), counted and scaled to unit length.
 * Training and scoring both go through `hashedFeatures`, so they cannot drift.
 */

export interface FeatureConfig {
  /** a power of two */
  readonly buckets: number;
  /** inclusive range of character n-gram lengths */
  readonly charNgrams: readonly [number, number];
  /** inclusive range of word n-gram lengths */
  readonly wordNgrams: readonly [number, number];
}

/** A sparse unit vector: bucket indices and their values. */
export interface SparseVector {
  readonly index: Int32Array;
  readonly value: Float32Array;
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const WORD_SALT = 0x9e3779b9;

let scratch = new Float32Array(0);
let seen = new Uint8Array(0);
let touched = new Int32Array(0);

/** Features of one folded text, O(length × n-gram lengths). */
export function hashedFeatures(folded: string, config: FeatureConfig): SparseVector {
  if (scratch.length !== config.buckets) {
    scratch = new Float32Array(config.buckets);
    seen = new Uint8Array(config.buckets);
    touched = new Int32Array(1024);
  }
  const mask = config.buckets - 1;
  let n = 0;
  const add = (h: number) => {
    const bucket = h & mask;
    if (seen[bucket] === 0) {
      seen[bucket] = 1;
      if (n === touched.length) {
        const grown = new Int32Array(n * 2);
        grown.set(touched);
        touched = grown;
      }
      touched[n++] = bucket;
    }
    // the sign comes from a bit the bucket index does not use
    scratch[bucket]! += h & 0x80000000 ? -1 : 1;
  };

  const text = ` ${folded} `;
  const [cMin, cMax] = config.charNgrams;
  for (let i = 0; i < text.length; i++) {
    let h = FNV_OFFSET;
    for (let k = 0; k < cMax && i + k < text.length; k++) {
      h = Math.imul(h ^ text.charCodeAt(i + k), FNV_PRIME);
      if (k + 1 >= cMin) add(Math.imul(h ^ (k + 1), FNV_PRIME) >>> 0);
    }
  }

  const [wMin, wMax] = config.wordNgrams;
  const words = folded.length === 0 ? [] : folded.split(' ');
  const wordHashes = new Int32Array(words.length);
  for (let w = 0; w < words.length; w++) {
    let h = FNV_OFFSET ^ WORD_SALT;
    const word = words[w]!;
    for (let k = 0; k < word.length; k++) h = Math.imul(h ^ word.charCodeAt(k), FNV_PRIME);
    wordHashes[w] = h;
  }
  for (let w = 0; w < words.length; w++) {
    let h = WORD_SALT;
    for (let k = 0; k < wMax && w + k < words.length; k++) {
      h = Math.imul(h ^ wordHashes[w + k]!, FNV_PRIME);
      if (k + 1 >= wMin) add(Math.imul(h ^ (0x100 + k), FNV_PRIME) >>> 0);
    }
  }

  let norm = 0;
  for (let i = 0; i < n; i++) norm += scratch[touched[i]!]! ** 2;
  const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  const index = new Int32Array(n);
  const value = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const bucket = touched[i]!;
    index[i] = bucket;
    value[i] = scratch[bucket]! * scale;
    scratch[bucket] = 0;
    seen[bucket] = 0;
  }
  return { index, value };
}
