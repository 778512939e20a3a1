import type { Deadline, StageInput, StageResult } from '../stage.js';
import { textTokens as tokens } from '../tokens.js';
import { stageView, withoutView, type TextPart } from '../views/index.js';
import { MIN_REPEAT_CHARS, elideMiddle, minifyJson, placeOf, repeatMarker, segments, squeezeWhitespace } from './passes.js';

/**
 * prompt_compaction: lowers prompt tokens with lossless structural passes on
 * user, assistant and tool-result text: whitespace, JSON minification, a
 * later exact repeat of a long block or document replaced by a reference to
 * the first, and the middle of an oversized tool output elided with a marker
 * (never in the conversation's final turn, which the model is about to read).
 * It never touches the last user turn, system instructions, tool definitions
 * or tool-call arguments, fenced code, structured tool fields, or anything at
 * or before a provider prompt-cache marker. `tokens_saved` is counted with
 * the o200k tokenizer over the parts it changed.
 */

type Pass = 'whitespace' | 'json' | 'repeat' | 'elide';

/** the turn of the last user text, which compaction leaves exactly as sent */
const lastUserTurn = (parts: readonly TextPart[]) => parts.reduce((t, p) => (p.kind === 'user' ? Math.max(t, p.turn) : t), -Infinity);

function editable(p: TextPart, protectedTurn: number): boolean {
  return (p.kind === 'user' || p.kind === 'assistant' || p.kind === 'tool_result') && !p.cacheMarked && !p.structured && p.turn !== protectedTurn;
}

/** Blocks seen so far (whole parts and prose paragraphs) and where they were first given. */
class Seen {
  private readonly first = new Map<string, string>();

  /** where an earlier copy of `block` is, else records this one as at `place` */
  earlier(block: string, place: string): string | undefined {
    if (block.length < MIN_REPEAT_CHARS) return undefined;
    const t = this.first.get(block);
    if (t === undefined) this.first.set(block, place);
    return t;
  }
}

const mapProse = (text: string, f: (prose: string) => string): string =>
  segments(text)
    .map((seg) => (seg.code ? seg.text : f(seg.text)))
    .join('');

/** later repeats of long paragraphs replaced by a reference to the first; first copies recorded */
function replaceRepeats(text: string, place: string, seen: Seen, used: Set<Pass>): string {
  const whole = seen.earlier(text, place);
  if (whole !== undefined) {
    used.add('repeat');
    return repeatMarker(text.length, whole);
  }
  return segments(text)
    .map((seg) => {
      if (seg.code) {
        seen.earlier(seg.text, place);
        return seg.text;
      }
      return seg.text
        .split('\n\n')
        .map((para) => {
          // the whole part is recorded already
          const first = para === text ? undefined : seen.earlier(para, place);
          if (first === undefined) return para;
          used.add('repeat');
          return repeatMarker(para.length, first);
        })
        .join('\n\n');
    })
    .join('');
}

/** the passes in order: whitespace or JSON, elision, then repeats (so a first copy is never one that gets elided) */
function compactPart(p: TextPart, finalTurn: number, seen: Seen, used: Set<Pass>): string {
  const json = minifyJson(p.text);
  let text = json ?? mapProse(p.text, squeezeWhitespace);
  if (text !== p.text) used.add(json === undefined ? 'whitespace' : 'json');
  if (p.kind === 'tool_result' && p.turn !== finalTurn && !segments(text).some((s) => s.code)) {
    const elided = elideMiddle(text);
    if (elided !== undefined) {
      used.add('elide');
      text = elided;
    }
  }
  return replaceRepeats(text, placeOf(p.kind, p.turn), seen, used);
}

/** registers a part compaction does not edit, so later repeats of it can refer to it */
function remember(p: TextPart, seen: Seen): void {
  const place = placeOf(p.kind, p.turn);
  if (seen.earlier(p.text, place) !== undefined) return;
  for (const seg of segments(p.text)) {
    if (seg.code) seen.earlier(seg.text, place);
    else for (const para of seg.text.split('\n\n')) seen.earlier(para, place);
  }
}

export function evaluatePromptCompaction(input: StageInput, deadline: Deadline): StageResult {
  const viewed = stageView(input);
  if ('reason' in viewed) return withoutView(viewed);
  const { view } = viewed;
  const parts = view.parts();
  const protectedTurn = lastUserTurn(parts);
  const finalTurn = view.turnCount() - 1;
  const seen = new Seen();
  const passes: Record<Pass, number> = { whitespace: 0, json: 0, repeat: 0, elide: 0 };
  let tokensSaved = 0;
  for (const p of parts) {
    if (deadline.expired()) return { outcome: 'ceiling_exceeded', detail: { reason: 'deadline passed while compacting parts' } };
    if (!editable(p, protectedTurn)) {
      remember(p, seen);
      continue;
    }
    const used = new Set<Pass>();
    const text = compactPart(p, finalTurn, seen, used);
    if (text === p.text) continue;
    for (const pass of used) passes[pass]++;
    tokensSaved += tokens(p.text) - tokens(text);
    view.replace(p.id, text);
  }
  if (!view.changed()) return { outcome: 'skipped', detail: { tokens_saved: 0, bytes_saved: 0, passes } };
  const body = view.serialize();
  return { outcome: 'applied', detail: { tokens_saved: tokensSaved, bytes_saved: input.body.byteLength - body.byteLength, passes }, change: { body } };
}
