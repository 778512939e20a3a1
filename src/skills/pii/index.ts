import type { Deadline, StageInput, StageResult } from '../stage.js';
import { stageView, withoutView } from '../views/index.js';
import { Redactor } from './redact.js';

/**
 * pii_redaction: replaces every value the recognizers find with a
 * placeholder such as `[EMAIL_1]` in every text part of the request: system,
 * user and assistant text, tool-call arguments and tool results. All of them
 * leave the gateway, and a value the caller wrote once is often echoed by an
 * earlier assistant turn or a tool. Tool definitions and request fields
 * outside the messages are left as they are. The detail lists kinds and
 * counts only; `restore` (placeholder → value) goes back to the main thread
 * for the reply restorer alone.
 */
export function evaluatePiiRedaction(input: StageInput, deadline: Deadline): StageResult {
  const viewed = stageView(input);
  if ('reason' in viewed) return withoutView(viewed);
  const { view } = viewed;
  const parts = view.parts();
  const redactor = new Redactor();
  for (const p of parts) redactor.reserve(p.text);
  for (const p of parts) {
    if (deadline.expired()) return { outcome: 'ceiling_exceeded', detail: { reason: 'deadline passed while scanning parts' } };
    view.replace(p.id, redactor.redact(p.text));
  }
  const redactions = Object.values(redactor.kinds).reduce((a, b) => a + b, 0);
  if (!view.changed()) return { outcome: 'skipped', detail: { kinds: {}, redactions: 0 } };
  return { outcome: 'applied', detail: { kinds: redactor.kinds, redactions }, change: { body: view.serialize() }, restore: redactor.restore };
}
