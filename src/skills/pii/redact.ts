import { findPii } from './find.js';
import { LABEL, type PiiKind } from './recognizers.js';

/** Any placeholder this module writes: `[EMAIL_1]`, `[API_KEY_12]`. */
export const PLACEHOLDER = /\[[A-Z][A-Z_]*_\d+\]/g;

/**
 * One request's redaction: the same value gets the same placeholder in every
 * part, and a placeholder the caller already wrote is never handed out (the
 * reply restorer would otherwise turn the caller's own text into a value).
 */
export class Redactor {
  /** placeholder → the caller's value, for the reply restorer */
  readonly restore: Record<string, string> = {};
  readonly kinds: Partial<Record<PiiKind, number>> = {};
  private readonly byValue = new Map<string, string>();
  private readonly next = new Map<string, number>();
  private readonly taken = new Set<string>();

  /** placeholders already present in the caller's text */
  reserve(text: string): void {
    for (const m of text.matchAll(PLACEHOLDER)) this.taken.add(m[0]);
  }

  private placeholder(kind: PiiKind, value: string): string {
    const known = this.byValue.get(value);
    if (known !== undefined) return known;
    const label = LABEL[kind];
    let n = this.next.get(label) ?? 1;
    while (this.taken.has(`[${label}_${n}]`)) n++;
    this.next.set(label, n + 1);
    const p = `[${label}_${n}]`;
    this.byValue.set(value, p);
    this.restore[p] = value;
    return p;
  }

  /** `text` with each value found replaced by its placeholder (the same string when nothing was found) */
  redact(text: string): string {
    const found = findPii(text);
    if (found.length === 0) return text;
    let out = '';
    let at = 0;
    for (const f of found) {
      out += text.slice(at, f.start) + this.placeholder(f.kind, text.slice(f.start, f.end));
      this.kinds[f.kind] = (this.kinds[f.kind] ?? 0) + 1;
      at = f.end;
    }
    return out + text.slice(at);
  }
}
