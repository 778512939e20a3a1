/**
 * A translated request body written as JSON text while it is produced. Built
 * as an object tree and then serialised, a conversation was held three times
 * at once (the caller's parsed body, the neutral form, the vendor's tree) with
 * the garbage of each step: a 30 MB chat body of 555k messages cost 20× its
 * size. Here each turn is serialised as soon as it is whole and only its text
 * is kept, packed into buffers, so the translation costs about the body's own
 * size again. The text is what JSON.stringify of the tree gives, byte for byte.
 */

/** text gathered before it is encoded into the buffer */
const PACK_CHARS = 64 * 1024;
/** a buffer added when the first is full */
const CHUNK_BYTES = 1024 * 1024;
/**
 * The first buffer's size, as a share of the caller's body: a translated body
 * is mostly 0.9 to 1.5 times it (more for a conversation of very short
 * messages, whose vendor blocks outweigh their text). What a body outgrows
 * goes to further buffers, joined at the end.
 */
const FIRST_BUFFER_SHARE = 1.5;

export class JsonText {
  private sealed: Buffer[] = [];
  private sealedBytes = 0;
  private buf: Buffer | undefined;
  private used = 0;
  private pending = '';

  /** `sizeHint`: the caller's body size, for the first buffer (0: the first buffer fits what is first packed) */
  constructor(private readonly sizeHint = 0) {}

  get empty(): boolean {
    return this.pending === '' && this.used === 0 && this.sealedBytes === 0;
  }

  write(text: string): void {
    this.pending += text;
    if (this.pending.length >= PACK_CHARS) this.pack();
  }

  /** appends what `other` holds, and empties it */
  take(other: JsonText): void {
    for (const b of other.sealed) this.copy(b);
    if (other.buf) this.copy(other.buf.subarray(0, other.used));
    this.write(other.pending);
    other.sealed = [];
    other.sealedBytes = 0;
    other.buf = undefined;
    other.used = 0;
    other.pending = '';
  }

  /** an empty text of this kind, for what is joined before it is written here (a turn) */
  blank(): JsonText {
    return new JsonText();
  }

  /** everything written, as one buffer (a view of the first when it held it all) */
  finish(): Buffer {
    this.pack();
    const last = this.buf ? this.buf.subarray(0, this.used) : Buffer.alloc(0);
    return this.sealed.length === 0 ? last : Buffer.concat([...this.sealed, last], this.sealedBytes + this.used);
  }

  private pack(): void {
    if (this.pending === '') return;
    const text = this.pending;
    this.pending = '';
    // at most 3 bytes per UTF-16 unit: the exact count is taken only when that bound does not fit
    this.room(text.length * 3 <= this.free() ? 0 : Buffer.byteLength(text));
    this.used += (this.buf as Buffer).write(text, this.used);
  }

  private copy(bytes: Buffer): void {
    this.pack();
    this.room(bytes.length);
    bytes.copy(this.buf as Buffer, this.used);
    this.used += bytes.length;
  }

  private free(): number {
    return this.buf ? this.buf.length - this.used : 0;
  }

  /** makes room for `n` more bytes: a further buffer when this one cannot take them */
  private room(n: number): void {
    if (this.buf && n <= this.free()) return;
    if (this.buf) {
      this.sealed.push(this.buf.subarray(0, this.used));
      this.sealedBytes += this.used;
    }
    const next = this.buf ? CHUNK_BYTES : Math.ceil(this.sizeHint * FIRST_BUFFER_SHARE);
    this.buf = Buffer.allocUnsafe(Math.max(n, next));
    this.used = 0;
  }
}

const NOTHING = Buffer.alloc(0);

/**
 * Text written nowhere: a translation run for its refusals alone (a 400 it
 * would answer), holding no body. /v1/execute checks each fallback so before
 * the first candidate is sent, and translates it again only if it is tried.
 */
export class DiscardedText extends JsonText {
  override get empty(): boolean {
    return true;
  }

  override write(): void {}

  override take(): void {}

  override blank(): JsonText {
    return new DiscardedText();
  }

  override finish(): Buffer {
    return NOTHING;
  }
}

/**
 * `{...head, [key]: [what fill writes], ...tail}` as JSON, written into
 * `out`: head and tail are small and serialised whole, the array's items are
 * written by `fill` (a TurnWriter over the same text).
 */
export function jsonWithArray(head: Record<string, unknown>, key: string, fill: (out: JsonText) => void, tail: Record<string, unknown>, out: JsonText): Buffer {
  const h = JSON.stringify(head);
  out.write(`${h.length > 2 ? `${h.slice(0, -1)},` : '{'}${JSON.stringify(key)}:[`);
  fill(out);
  const t = JSON.stringify(tail);
  out.write(t.length > 2 ? `],${t.slice(1)}` : ']}');
  return out.finish();
}

/**
 * The turns of a translated conversation, written as they come: consecutive
 * messages of one vendor role are joined into one turn (vendors want user and
 * assistant turns to alternate) and a turn left without blocks is dropped.
 * Only the turn being joined is held, as text. Leading blocks go before the
 * turn's others (Anthropic wants a user turn's tool results first).
 */
export class TurnWriter<R extends string> {
  private role: R | undefined;
  /** the turn being joined: its leading blocks and its others, packed like the body once they grow (a conversation may be one long turn) */
  private readonly lead: JsonText;
  private readonly rest: JsonText;
  private first = true;

  /** `blocksKey`: the turn's array of blocks (`content`, `parts`) */
  constructor(
    private readonly out: JsonText,
    private readonly blocksKey: string,
  ) {
    this.lead = out.blank();
    this.rest = out.blank();
  }

  /** the next message's vendor role: a change of role ends the turn */
  message(role: R): void {
    if (role === this.role) return;
    this.end();
    this.role = role;
  }

  block(block: unknown, leading = false): void {
    const held = leading ? this.lead : this.rest;
    if (!held.empty) held.write(',');
    held.write(JSON.stringify(block));
  }

  /** writes the turn being joined, if it has blocks */
  end(): void {
    const { lead, rest, out } = this;
    if (lead.empty && rest.empty) return;
    out.write(`${this.first ? '' : ','}{"role":${JSON.stringify(this.role)},${JSON.stringify(this.blocksKey)}:[`);
    const both = !lead.empty && !rest.empty;
    out.take(lead);
    if (both) out.write(',');
    out.take(rest);
    out.write(']}');
    this.first = false;
  }
}
