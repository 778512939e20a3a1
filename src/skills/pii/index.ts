import type { Deadline, StageInput, StageResult } from '../stage.js';
import { stageView, withoutView, type MessageView } from '../views/index.js';
import { Redactor } from './redact.js';

/** the inspector feed's prompt preview is at most this many characters */
export const PREVIEW_CHARS = 120;
/** the detail field holding the preview: the inspector feed's alone */
const PREVIEW_FIELD = 'preview';

/** The prompt preview a report's detail holds, if any. */
export const previewIn = (detail: Readonly<Record<string, unknown>> | undefined): string | undefined => {
  const preview = detail?.[PREVIEW_FIELD];
  return typeof preview === 'string' ? preview : undefined;
};

/** A report's detail as the trace and the decision record show it: the preview left out (the caller's text, however redacted, stays in the process). */
export const withoutPreview = <T extends Readonly<Record<string, unknown>>>(detail: T): T =>
  PREVIEW_FIELD in detail ? (Object.fromEntries(Object.entries(detail).filter(([k]) => k !== PREVIEW_FIELD)) as T) : detail;

/** The newest user text as redacted, cut to PREVIEW_CHARS (never half a surrogate pair). */
function previewOf(view: MessageView): string {
  const parts = view.parts();
  for (let i = parts.length - 1; i >= 0; i--) {
    const p = parts[i];
    if (p?.kind !== 'user') continue;
    const cut = p.text.slice(0, PREVIEW_CHARS);
    return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
  }
  return '';
}

/**
 * pii_redaction: replaces every value the recognizers find with a
 * placeholder such as `[EMAIL_1]` in every text part of the request: system,
 * user and assistant text, tool-call arguments and tool results. All of them
 * leave the gateway, and a value the caller wrote once is often echoed by an
 * earlier assistant turn or a tool. Tool definitions and request fields
 * outside the messages are left as they are. The detail lists kinds and
 * counts, and `preview`, the newest user text as redacted, for the inspector
 * feed only (withoutPreview); `restore`
 * (placeholder → value) goes back to the main thread for the reply restorer alone.
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
  if (!view.changed()) return { outcome: 'skipped', detail: { kinds: {}, redactions: 0, [PREVIEW_FIELD]: previewOf(view) } };
  return { outcome: 'applied', detail: { kinds: redactor.kinds, redactions, [PREVIEW_FIELD]: previewOf(view) }, change: { body: view.serialize() }, restore: redactor.restore };
}
