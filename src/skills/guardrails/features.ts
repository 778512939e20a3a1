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
/** the buckets counted so far, in first-touch order; as long as there are buckets, so it never grows mid-count */
let touched = new Int32Array(0);
let touchedCount = 0;
let wordHashes = new Int32Array(256);
/** the text's UTF-16 code units with the padding spaces: read from an array, each once, instead of up to five times each through charCodeAt */
let codes = new Uint16Array(512);

/**
 * Counts the features of `folded` into the scratch buckets (touched lists
 * them); O(length × n-gram lengths), no allocation once the scratch has grown.
 * The text is read as if padded with a space on each side.
 */
function countFeatures(folded: string, config: FeatureConfig): void {
  if (scratch.length !== config.buckets) {
    scratch = new Float32Array(config.buckets);
    seen = new Uint8Array(config.buckets);
    touched = new Int32Array(config.buckets);
  }
  const mask = config.buckets - 1;
  const len = folded.length + 2;
  if (codes.length < len) codes = new Uint16Array(len * 2);
  // the scratch in locals, the count written out in each loop: a shared helper over the module's
  // arrays cost a quarter of the classifier's time (measured)
  const text = codes;
  const counts = scratch;
  const first = seen;
  const order = touched;
  let n = 0;
  text[0] = 32;
  for (let i = 0; i < folded.length; i++) text[i + 1] = folded.charCodeAt(i);
  text[len - 1] = 32;

  // a hash's low bits pick the bucket, its top bit the sign
  const [cMin, cMax] = config.charNgrams;
  for (let i = 0; i < len; i++) {
    let h = FNV_OFFSET;
    for (let k = 0; k < cMax && i + k < len; k++) {
      h = Math.imul(h ^ text[i + k]!, FNV_PRIME);
      if (k + 1 < cMin) continue;
      const x = Math.imul(h ^ (k + 1), FNV_PRIME);
      const bucket = x & mask;
      if (first[bucket] === 0) {
        first[bucket] = 1;
        order[n++] = bucket;
      }
      counts[bucket]! += x < 0 ? -1 : 1;
    }
  }

  // word hashes, as split(' ') would cut them (an empty text has no words); the text is text[1 .. len - 1)
  let words = 0;
  if (folded.length > 0) {
    let h = FNV_OFFSET ^ WORD_SALT;
    for (let i = 1; i < len; i++) {
      const c = text[i]!;
      if (c !== 32) {
        h = Math.imul(h ^ c, FNV_PRIME);
        continue;
      }
      if (words === wordHashes.length) {
        const grown = new Int32Array(words * 2);
        grown.set(wordHashes);
        wordHashes = grown;
      }
      wordHashes[words++] = h;
      h = FNV_OFFSET ^ WORD_SALT;
    }
  }
  const [wMin, wMax] = config.wordNgrams;
  for (let w = 0; w < words; w++) {
    let h = WORD_SALT;
    for (let k = 0; k < wMax && w + k < words; k++) {
      h = Math.imul(h ^ wordHashes[w + k]!, FNV_PRIME);
      if (k + 1 < wMin) continue;
      const x = Math.imul(h ^ (0x100 + k), FNV_PRIME);
      const bucket = x & mask;
      if (first[bucket] === 0) {
        first[bucket] = 1;
        order[n++] = bucket;
      }
      counts[bucket]! += x < 0 ? -1 : 1;
    }
  }
  touchedCount = n;
}

/** Features of one folded text as a sparse unit vector (training reads them so). */
export function hashedFeatures(folded: string, config: FeatureConfig): SparseVector {
  countFeatures(folded, config);
  const n = touchedCount;
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

/**
 * `weights` · the unit feature vector of `folded`, without building the
 * vector: the classifier's scoring path, run per window of every prompt.
 */
export function weightedFeatures(folded: string, config: FeatureConfig, weights: Float32Array): number {
  countFeatures(folded, config);
  let norm = 0;
  let dot = 0;
  for (let i = 0; i < touchedCount; i++) {
    const bucket = touched[i]!;
    const c = scratch[bucket]!;
    norm += c * c;
    dot += weights[bucket]! * c;
    scratch[bucket] = 0;
    seen[bucket] = 0;
  }
  return norm > 0 ? dot / Math.sqrt(norm) : 0;
}
