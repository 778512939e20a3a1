import { chatShape, executeShape } from './chat.js';
import { converseShape } from './converse.js';
import { generateContentShape } from './generate-content.js';
import { messagesShape } from './messages.js';
import { responsesShape } from './responses.js';
import type { StageInput, StageResult } from '../stage.js';
import { PartCollector, isObj, type Json, type MessageView, type Shape, type Slot, type TextPart } from './view.js';

export type { MessageView, PartKind, TextPart } from './view.js';

/** The message shape of each surface that parses a body (surface ids of src/surfaces, plus the native `execute`). */
const SHAPES: Readonly<Record<string, Shape>> = {
  chat_completions: chatShape,
  cloudx: chatShape,
  execute: executeShape,
  responses: responsesShape,
  messages: messagesShape,
  generate_content: generateContentShape,
  converse: converseShape,
};

/** True when skills can read this surface's bodies. */
export const hasView = (surface: string): boolean => surface in SHAPES;

class ShapedView implements MessageView {
  private cached: { parts: TextPart[]; slots: Slot[] } | undefined;
  private dirty = false;

  constructor(
    private readonly shape: Shape,
    private readonly root: Json,
  ) {}

  private walked() {
    if (this.cached === undefined) {
      const c = new PartCollector();
      this.shape.walk(this.root, c);
      this.cached = { parts: c.done(), slots: c.slots };
    }
    return this.cached;
  }

  parts(): readonly TextPart[] {
    return this.walked().parts;
  }

  turnCount(): number {
    return this.shape.turns(this.root)?.length ?? 0;
  }

  replace(id: number, text: string): void {
    const { parts, slots } = this.walked();
    const part = parts[id];
    const slot = slots[id];
    if (part === undefined || slot === undefined) throw new RangeError(`no text part ${id}`);
    if (part.text === text) return;
    slot.set(text);
    parts[id] = { ...part, text };
    this.dirty = true;
  }

  fold(from: number, to: number, summary?: string): boolean {
    const { shape } = this;
    const turns = shape.turns(this.root) ?? [];
    if (from < 0 || to > turns.length || from >= to) return false;
    const inside = turns.slice(from, to);
    const calls = new Set(inside.flatMap((t) => shape.calls(t)));
    const results = new Set(inside.flatMap((t) => shape.results(t)));
    // every call folded needs its result folded with it, and the other way round
    if (calls.size !== results.size || [...calls].some((id) => !results.has(id))) return false;
    turns.splice(from, to - from, ...(summary === undefined ? [] : [shape.userTurn(summary)]));
    if (shape.merge) this.mergeAround(turns, from, summary === undefined ? 0 : 1);
    this.cached = undefined;
    this.dirty = true;
    return true;
  }

  /** merges same-role neighbours at the edges of the spliced span [at, at+len) */
  private mergeAround(turns: unknown[], at: number, len: number): void {
    const merge = this.shape.merge!;
    for (let i = Math.min(at + len, turns.length - 1); i >= Math.max(at, 1); i--) {
      if (this.shape.role(turns[i - 1]) === this.shape.role(turns[i])) {
        merge(turns[i - 1], turns[i]);
        turns.splice(i, 1);
      }
    }
  }

  changed(): boolean {
    return this.dirty;
  }

  serialize(): Uint8Array {
    return Buffer.from(JSON.stringify(this.root));
  }
}

/**
 * The view of a parsed body for its surface, or undefined when the surface
 * has no message shape or the body does not have the shape's turn array.
 */
export function viewOf(surface: string, root: unknown): MessageView | undefined {
  const shape = SHAPES[surface];
  if (shape === undefined || !isObj(root)) return undefined;
  if (!Array.isArray(shape.turns(root))) return undefined;
  return new ShapedView(shape, root);
}

/**
 * The largest body a stage parses whole. The parse is an object tree, and the
 * parts and the rewrite on top of it cost the stage's pool thread about 20×
 * the body's size (a 30 MB conversation of short turns took the process to
 * 30× its size); past this, a stage that would need the whole tree does not
 * build it. A body this large passes the default acting ceiling anyway
 * (about 4 MB/s for redaction or compaction on the machine measured).
 */
export const VIEW_MAX_BYTES = 2 * 1024 * 1024;

/** why a stage has no view of its body; `oversized`: the body is past VIEW_MAX_BYTES and was not parsed */
export interface NoView {
  reason: string;
  oversized?: true;
}

/**
 * The view of a stage's body: its own parse (the view edits it in place), or
 * the reason there is none (a surface without a message shape, a body past
 * VIEW_MAX_BYTES, a body that is not JSON or has no turns).
 */
export function stageView(input: StageInput): { view: MessageView } | NoView {
  if (!hasView(input.surface)) return { reason: 'no message view for this surface' };
  const bytes = input.body.byteLength;
  if (bytes > VIEW_MAX_BYTES) return { reason: `body of ${bytes} bytes is past the ${VIEW_MAX_BYTES} a stage parses whole: left as sent`, oversized: true };
  let root: unknown;
  try {
    root = JSON.parse(input.text());
  } catch {
    return { reason: 'body is not JSON' };
  }
  const view = viewOf(input.surface, root);
  return view === undefined ? { reason: 'body has no messages' } : { view };
}

/**
 * The result of a stage that edits the messages and has no view: a body too
 * large to parse whole fails open, as a stage that misses its ceiling does
 * (an acting one has the request relayed as sent); any other reason is
 * nothing to work on.
 */
export const withoutView = (none: NoView): StageResult => ({ outcome: none.oversized ? 'ceiling_exceeded' : 'skipped', detail: { reason: none.reason } });
