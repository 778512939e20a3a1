import { readFileSync } from 'node:fs';
import { weightedFeatures, type FeatureConfig } from './features.js';
import type { Deadline } from './normalize.js';

/**
 * The learned stage (`learned_injection`): logistic regression over hashed
 * n-gram features, trained by scripts/train-guardrails.ts on
 * data/guardrails/examples.jsonl. Its weights ship as model.json next to this
 * file and are read once per thread.
 */

export interface ClassifierModel extends FeatureConfig {
  readonly bias: number;
  /** score at or above which a text is an injection */
  readonly threshold: number;
  /** characters scored at a time; a long prompt scores as its worst window */
  readonly window: number;
  readonly weights: Float32Array;
}

/** model.json as written by the training script. */
export interface ModelFile {
  format: 'hashed-ngram-logistic-regression/1';
  buckets: number;
  charNgrams: [number, number];
  wordNgrams: [number, number];
  window: number;
  bias: number;
  threshold: number;
  /** Float32Array (little-endian) of `buckets` weights, base64 */
  weights: string;
  /** what the training script measured on the held-out split */
  heldOut: HeldOutMetrics;
}

export interface HeldOutMetrics {
  examples: number;
  positives: number;
  negatives: number;
  precision: number;
  recall: number;
  falsePositiveRate: number;
}

export const MODEL_PATH = new URL('./model.json', import.meta.url);

export function modelFromFile(file: ModelFile): ClassifierModel {
  const bytes = Buffer.from(file.weights, 'base64');
  if (bytes.length !== file.buckets * 4) throw new Error(`model.json: ${bytes.length} weight bytes for ${file.buckets} buckets`);
  // copied into its own aligned buffer: a base64 decode may land at any offset of Node's pool
  const weights = new Float32Array(file.buckets);
  new Uint8Array(weights.buffer).set(bytes);
  const { buckets, charNgrams, wordNgrams, window, bias, threshold } = file;
  return { buckets, charNgrams, wordNgrams, window, bias, threshold, weights };
}

export function readModelFile(path: URL = MODEL_PATH): ModelFile {
  return JSON.parse(readFileSync(path, 'utf8')) as ModelFile;
}

let shipped: ClassifierModel | undefined;

/** The shipped model, read from disk on the first call in this thread. */
export function shippedModel(): ClassifierModel {
  shipped ??= modelFromFile(readModelFile());
  return shipped;
}

const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));

/** Probability that one window of folded text is an injection. */
export function scoreWindow(model: ClassifierModel, folded: string): number {
  return sigmoid(model.bias + weightedFeatures(folded, model, model.weights));
}

/**
 * The worst window's score of a folded text: windows of `model.window`
 * characters cut at spaces, each overlapping the previous by half, so a short
 * injection inside a long document is scored on its own. Stops early (with
 * the worst so far) when the deadline passes.
 */
export function scoreText(model: ClassifierModel, folded: string, deadline: Deadline): number {
  if (folded.length <= model.window) return scoreWindow(model, folded);
  const step = model.window >> 1;
  let worst = 0;
  for (let start = 0; start < folded.length; ) {
    let end = Math.min(folded.length, start + model.window);
    if (end < folded.length) {
      const cut = folded.lastIndexOf(' ', end);
      if (cut > start + step) end = cut;
    }
    worst = Math.max(worst, scoreWindow(model, folded.slice(start, end)));
    if (end === folded.length || deadline.expired()) break;
    const next = folded.indexOf(' ', start + step);
    start = next < 0 || next >= end ? end : next + 1;
  }
  return worst;
}
