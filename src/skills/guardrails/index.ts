import { performance } from 'node:perf_hooks';
import { scoreText, shippedModel, type ClassifierModel } from './classifier.js';
import { DECODED_CHARS_PER_EVALUATION, joinedViews, scanViews, type Deadline, type ScanBudget } from './normalize.js';
import { matchRules, REGEX_VALUES, type RegexValue } from './regex.js';

/**
 * The guardrails evaluator, run inside a pool worker on the caller's prompt
 * text: the regex stage always, the learned classifier per
 * GW_GUARDRAILS_MODEL_MODE. Pure and synchronous; the only I/O is the model
 * file, read once per thread on first use.
 */

export { promptTextParts, walkedPromptTextParts, type BodyShape } from './prompt-text.js';
export type { Deadline } from './normalize.js';

export type ModelMode = 'shadow' | 'enforce' | 'off';
export type GuardrailValue = RegexValue | 'learned_injection';

export interface GuardrailOptions {
  modelMode: ModelMode;
  deadline: Deadline;
  /** the classifier to use; the shipped one when absent */
  model?: ClassifierModel;
  /** false: the classifier alone (its own stage), without the regex rules; default true */
  regex?: boolean;
}

export interface ClassifierVerdict {
  /** probability of an injection, 4 decimals */
  score: number;
  label: 'injection' | 'benign';
  mode: 'shadow' | 'enforce';
}

export interface GuardrailVerdict {
  /** every value that matched, in the order of the documented table (docs/errors.md); `learned_injection` only when enforced */
  detected: GuardrailValue[];
  /** null when the model mode is off */
  classifier: ClassifierVerdict | null;
  /** true: answer 400 guardrail_violation, send nothing upstream */
  refuse: boolean;
  ms: number;
  /** false when the deadline cut the scan short: the verdict covers only part of the text */
  complete: boolean;
}

/** Reads the shipped classifier now, so the first request does not pay for it (call at worker start). */
export function preloadGuardrails(): void {
  shippedModel();
}

export function evaluateGuardrails(parts: readonly string[], options: GuardrailOptions): GuardrailVerdict {
  const started = performance.now();
  const { modelMode, deadline } = options;
  const budget: ScanBudget = { deadline, decodedChars: DECODED_CHARS_PER_EVALUATION };
  const model = modelMode === 'off' ? undefined : (options.model ?? shippedModel());
  const found = new Set<RegexValue>();
  let worst = 0;
  let complete = true;
  for (const part of parts) {
    if (deadline.expired()) {
      complete = false;
      break;
    }
    if (part.length === 0) continue;
    const views = scanViews(part, budget);
    if (options.regex !== false) for (const view of views) matchRules(view, found);
    if (model) worst = Math.max(worst, scoreText(model, joinedViews(views), deadline));
  }
  if (deadline.expired()) complete = false;

  const detected: GuardrailValue[] = REGEX_VALUES.filter((v) => found.has(v));
  let classifier: ClassifierVerdict | null = null;
  if (model && modelMode !== 'off') {
    const injection = worst >= model.threshold;
    classifier = { score: Math.round(worst * 1e4) / 1e4, label: injection ? 'injection' : 'benign', mode: modelMode };
    if (injection && modelMode === 'enforce') detected.push('learned_injection');
  }
  return { detected, classifier, refuse: detected.length > 0, ms: performance.now() - started, complete };
}
