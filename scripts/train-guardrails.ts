/**
 * Trains the guardrails' learned stage (`learned_injection`) and writes its
 * weights to src/skills/guardrails/model.json:
 *
 *   node --import tsx scripts/train-guardrails.ts            trains, prints held-out metrics, writes the model
 *   node --import tsx scripts/train-guardrails.ts --check    trains and fails if the result differs from model.json
 *
 * Data: data/guardrails/examples.jsonl, one {text, label (1 injection, 0 not), kind} a line.
 * Held-out split: the examples whose text hashes to 0 mod 5 (stable as the file grows).
 * Model: logistic regression on hashed character and word n-grams (features.ts),
 * trained by SGD in a seeded order, so a run is deterministic. The threshold is
 * the lowest that keeps the false-positive rate at most 5% on out-of-fold scores
 * of the training split (5 folds); the held-out split is never seen until the end.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MODEL_PATH, modelFromFile, type HeldOutMetrics, type ModelFile } from '../src/skills/guardrails/classifier.js';
import { hashedFeatures, type FeatureConfig, type SparseVector } from '../src/skills/guardrails/features.js';
import { evaluateGuardrails } from '../src/skills/guardrails/index.js';
import { DECODED_CHARS_PER_EVALUATION, joinedViews, scanViews } from '../src/skills/guardrails/normalize.js';

export interface Example {
  text: string;
  label: 0 | 1;
  kind: string;
}

export const EXAMPLES_PATH = fileURLToPath(new URL('../data/guardrails/examples.jsonl', import.meta.url));

const CONFIG: FeatureConfig & { window: number } = { buckets: 1 << 15, charNgrams: [3, 5], wordNgrams: [1, 2], window: 256 };
const EPOCHS = 30;
const LEARNING_RATE = 0.5;
const L2 = 1e-5;
const SEED = 20240917;
const MAX_THRESHOLD_FPR = 0.05;
const FOLDS = 5;

export function readExamples(path = EXAMPLES_PATH): Example[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Example);
}

function fnv(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export const isHeldOut = (e: Example) => fnv(e.text) % 5 === 0;

/** mulberry32: a small seeded generator, so the training order is the same every run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffled<T>(items: readonly T[], next: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** The text the classifier sees for one prompt part, as evaluateGuardrails builds it. */
function featuresOf(text: string): SparseVector {
  const views = scanViews(text, { deadline: { expired: () => false }, decodedChars: DECODED_CHARS_PER_EVALUATION });
  return hashedFeatures(joinedViews(views), CONFIG);
}

interface Sample {
  x: SparseVector;
  y: 0 | 1;
}

const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));
const dot = (w: Float64Array, bias: number, x: SparseVector) => {
  let z = bias;
  for (let i = 0; i < x.index.length; i++) z += w[x.index[i]!]! * x.value[i]!;
  return z;
};

function fit(samples: readonly Sample[], seed: number): { weights: Float64Array; bias: number } {
  const weights = new Float64Array(CONFIG.buckets);
  let bias = 0;
  const positives = samples.filter((s) => s.y === 1).length;
  // each class weighs half of the loss, whatever the class balance
  const classWeight = [samples.length / (2 * (samples.length - positives)), samples.length / (2 * positives)] as const;
  const next = random(seed);
  for (let epoch = 0; epoch < EPOCHS; epoch++) {
    const rate = LEARNING_RATE / (1 + 0.2 * epoch);
    for (const s of shuffled(samples, next)) {
      const g = (sigmoid(dot(weights, bias, s.x)) - s.y) * classWeight[s.y];
      for (let i = 0; i < s.x.index.length; i++) {
        const j = s.x.index[i]!;
        weights[j] = weights[j]! - rate * (g * s.x.value[i]! + L2 * weights[j]!);
      }
      bias -= rate * g;
    }
  }
  return { weights, bias };
}

/** The lowest threshold whose out-of-fold false-positive rate on the training split is at most MAX_THRESHOLD_FPR. */
function chooseThreshold(samples: readonly Sample[]): number {
  const order = shuffled(samples, random(SEED + 1));
  const scored: { score: number; y: 0 | 1 }[] = [];
  for (let fold = 0; fold < FOLDS; fold++) {
    const train = order.filter((_, i) => i % FOLDS !== fold);
    const { weights, bias } = fit(train, SEED + 2 + fold);
    for (const s of order.filter((_, i) => i % FOLDS === fold)) scored.push({ score: sigmoid(dot(weights, bias, s.x)), y: s.y });
  }
  const negatives = scored.filter((s) => s.y === 0);
  for (let t = 0.3; t < 0.96; t += 0.025) {
    const fpr = negatives.filter((s) => s.score >= t).length / negatives.length;
    if (fpr <= MAX_THRESHOLD_FPR) return Math.round(t * 1000) / 1000;
  }
  return 0.95;
}

/** Held-out metrics of a model, through the same evaluator the gateway runs. */
export function heldOutMetrics(file: ModelFile, examples: readonly Example[]): HeldOutMetrics {
  const model = modelFromFile(file);
  const held = examples.filter(isHeldOut);
  let tp = 0;
  let fp = 0;
  let fn = 0;
  let tn = 0;
  for (const e of held) {
    const verdict = evaluateGuardrails([e.text], { modelMode: 'enforce', deadline: { expired: () => false }, model });
    const flagged = verdict.classifier?.label === 'injection';
    if (flagged && e.label === 1) tp++;
    else if (flagged) fp++;
    else if (e.label === 1) fn++;
    else tn++;
  }
  const round = (v: number) => Math.round(v * 1e4) / 1e4;
  return {
    examples: held.length,
    positives: tp + fn,
    negatives: fp + tn,
    precision: round(tp / Math.max(1, tp + fp)),
    recall: round(tp / Math.max(1, tp + fn)),
    falsePositiveRate: round(fp / Math.max(1, fp + tn)),
  };
}

/** Trains on the training split and measures on the held-out one. Deterministic. */
export function trainGuardrails(examples: readonly Example[]): ModelFile {
  const samples = examples.filter((e) => !isHeldOut(e)).map((e): Sample => ({ x: featuresOf(e.text), y: e.label }));
  const threshold = chooseThreshold(samples);
  const { weights, bias } = fit(samples, SEED);
  const file: ModelFile = {
    format: 'hashed-ngram-logistic-regression/1',
    buckets: CONFIG.buckets,
    charNgrams: [...CONFIG.charNgrams] as [number, number],
    wordNgrams: [...CONFIG.wordNgrams] as [number, number],
    window: CONFIG.window,
    bias: Math.fround(bias),
    threshold,
    weights: Buffer.from(new Float32Array(weights).buffer).toString('base64'),
    heldOut: { examples: 0, positives: 0, negatives: 0, precision: 0, recall: 0, falsePositiveRate: 0 },
  };
  file.heldOut = heldOutMetrics(file, examples);
  return file;
}

function main(): void {
  const examples = readExamples();
  const file = trainGuardrails(examples);
  const m = file.heldOut;
  process.stdout.write(
    `examples: ${examples.length} (${examples.length - m.examples} train, ${m.examples} held out: ${m.positives} injections, ${m.negatives} not)\n` +
      `threshold ${file.threshold}  precision ${m.precision}  recall ${m.recall}  false-positive rate ${m.falsePositiveRate}\n`,
  );
  const json = `${JSON.stringify(file)}\n`;
  if (process.argv.includes('--check')) {
    if (readFileSync(MODEL_PATH, 'utf8') !== json) {
      process.stderr.write('model.json differs from a fresh training run: run scripts/train-guardrails.ts\n');
      process.exit(1);
    }
    return;
  }
  writeFileSync(MODEL_PATH, json);
  process.stdout.write(`wrote ${fileURLToPath(MODEL_PATH)}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
