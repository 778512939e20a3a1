/**
 * The message view every skill works through: the text parts of one request
 * by role and turn, whatever the vendor's shape. A skill reads parts, replaces
 * a part's text, or folds a range of turns; the view writes the body back in
 * the same vendor format. Only the parsed JSON is rewritten: fields the skill
 * did not touch keep their values (JSON re-serialisation may respell a number
 * such as `1.0` as `1`, never change it).
 */

export type PartKind = 'system' | 'user' | 'assistant' | 'tool_call' | 'tool_result';

export interface TextPart {
  /** the part's position in `parts()`; stable until a fold */
  readonly id: number;
  /** the vendor's own role string (`user`, `assistant`, `model`, `tool`, `developer`…) */
  readonly role: string;
  /** index of the turn in the vendor's turn array; -1 for system instructions outside it */
  readonly turn: number;
  readonly kind: PartKind;
  readonly text: string;
  /** at or before a provider prompt-cache marker (`cache_control`, `cachePoint`): editing it throws the cached prefix away */
  readonly cacheMarked: boolean;
  /** the text renders a structured field (tool input, function response) as JSON: a replacement must be JSON of the same kind */
  readonly structured: boolean;
  /** the tool's name, on a tool_call part */
  readonly name?: string;
}

export interface MessageView {
  parts(): readonly TextPart[];
  /** the number of turns in the conversation */
  turnCount(): number;
  /** sets one part's text (by `TextPart.id`) */
  replace(id: number, text: string): void;
  /**
   * Replaces turns [from, to) with one user turn carrying `summary` (or with
   * nothing when it is undefined). Refused (false, nothing changed) when the
   * range would split a tool call from its result. Vendors that require
   * alternating roles get adjacent same-role turns merged.
   */
  fold(from: number, to: number, summary?: string): boolean;
  changed(): boolean;
  /** the body in the same vendor format */
  serialize(): Uint8Array;
}

export type Json = Record<string, unknown>;

export const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** Where a part's text lives in the parsed body. */
export interface Slot {
  get(): string;
  set(text: string): void;
  structured?: true;
}

/** A string field of an object. */
export const field = (obj: Json, key: string): Slot => ({
  get: () => obj[key] as string,
  set: (t) => {
    obj[key] = t;
  },
});

/** An object-valued field shown as JSON text (tool inputs, function arguments as objects). */
export const jsonField = (obj: Json, key: string): Slot => ({
  structured: true,
  get: () => JSON.stringify(obj[key]),
  set: (t) => {
    obj[key] = JSON.parse(t) as unknown;
  },
});

/** Collects parts in document order and remembers the last prompt-cache marker. */
export class PartCollector {
  readonly parts: Array<Omit<TextPart, 'cacheMarked'>> = [];
  readonly slots: Slot[] = [];
  /** parts up to this index (inclusive) are at or before a cache marker */
  private markedThrough = -1;

  add(role: string, turn: number, kind: PartKind, slot: Slot, name?: string): void {
    this.parts.push({ id: this.parts.length, role, turn, kind, text: slot.get(), structured: slot.structured === true, ...(name === undefined ? {} : { name }) });
    this.slots.push(slot);
  }

  /** a cache marker here: everything collected so far is in the cached prefix */
  marker(): void {
    this.markedThrough = this.parts.length - 1;
  }

  done(): TextPart[] {
    return this.parts.map((p) => ({ ...p, cacheMarked: p.id <= this.markedThrough }));
  }
}

/** What each vendor shape tells the common view. */
export interface Shape {
  /** the conversation's turn array in the parsed body (mutated in place by folds) */
  turns(root: Json): unknown[] | undefined;
  /** emits every text part (system instructions first, then turns) and every cache marker, in document order */
  walk(root: Json, c: PartCollector): void;
  /** the turn's role for alternation; tool items count as the side that sent them */
  role(turn: unknown): string;
  /** ids of tool calls made in the turn and of tool results it carries */
  calls(turn: unknown): string[];
  results(turn: unknown): string[];
  /** a user turn carrying `text` */
  userTurn(text: string): unknown;
  /** for vendors that require alternating roles: appends b's content to a's (tool results first) */
  merge?(a: unknown, b: unknown): void;
}
