import type { Deadline } from './normalize.js';

/**
 * A JSON document read in place from its bytes, member by member: a reader
 * takes the values it wants (each built alone, by JSON.parse of its own
 * bytes) and skips the rest, which is checked against the JSON grammar but
 * never built. A large body is so read without an object tree of the whole
 * document, nor its text decoded at once. The walk accepts exactly what
 * JSON.parse of the body's UTF-8 text accepts; anything else throws NotJson.
 * The deadline is polled as the walk goes: past it, it throws WALK_EXPIRED.
 */

export class NotJson extends Error {}

/** thrown when the deadline passes mid-walk */
export const WALK_EXPIRED = Symbol('the deadline passed mid-walk');

const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;
const DOT = 0x2e;

/** the elements built together by eachValue: about this many bytes of them */
const BATCH_BYTES = 64 * 1024;
/** the bytes walked between polls of the deadline */
const POLL_BYTES = 256 * 1024;

const isSpace = (c: number | undefined): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;
const isHex = (c: number | undefined): boolean => c !== undefined && (isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66));
/** the characters a backslash may escape besides `u`: " \ / b f n r t */
const SIMPLE_ESCAPES = new Set([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);
const LITERALS: ReadonlyArray<Buffer> = [Buffer.from('true'), Buffer.from('false'), Buffer.from('null')];

export class JsonWalk {
  private readonly bytes: Buffer;
  private i = 0;
  private pollAt = POLL_BYTES;

  constructor(
    bytes: Uint8Array,
    private readonly deadline: Deadline,
  ) {
    this.bytes = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** true when the next value is an object */
  atObject(): boolean {
    this.space();
    return this.bytes[this.i] === OPEN_OBJECT;
  }

  /** true when the next value is an array */
  atArray(): boolean {
    this.space();
    return this.bytes[this.i] === OPEN_ARRAY;
  }

  /** Each member of the object that comes next, in order: `visit` must take or skip its value. */
  members(visit: (key: string) => void): void {
    this.expect(OPEN_OBJECT);
    if (this.closes(CLOSE_OBJECT)) return;
    do {
      const key = this.key();
      visit(key);
    } while (this.separated(CLOSE_OBJECT));
  }

  /**
   * Each element of the array that comes next, built: those of about
   * BATCH_BYTES together, by one JSON.parse (one per element costs twice as
   * much on a conversation of short messages), so that no more than a batch
   * is built at a time.
   */
  eachValue(visit: (v: unknown) => void): void {
    this.expect(OPEN_ARRAY);
    if (this.closes(CLOSE_ARRAY)) return;
    let batchStart = -1;
    const flush = () => {
      for (const v of JSON.parse(`[${this.bytes.toString('utf8', batchStart, this.i)}]`) as unknown[]) visit(v);
      batchStart = -1;
    };
    do {
      this.space();
      if (batchStart === -1) batchStart = this.i;
      this.skip();
      if (this.i - batchStart >= BATCH_BYTES || !this.peekComma()) flush();
    } while (this.separated(CLOSE_ARRAY));
  }

  /** the next value, built */
  value(): unknown {
    this.space();
    const start = this.i;
    this.skip();
    return JSON.parse(this.bytes.toString('utf8', start, this.i));
  }

  /** Passes over the next value, checking it without building it (iteratively: nesting depth costs no stack). */
  skip(): void {
    const open: number[] = [];
    for (;;) {
      this.poll();
      this.space();
      const c = this.bytes[this.i];
      if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        this.i++;
        const close = c === OPEN_OBJECT ? CLOSE_OBJECT : CLOSE_ARRAY;
        if (!this.closes(close)) {
          open.push(close);
          if (close === CLOSE_OBJECT) this.key();
          continue;
        }
      } else this.scalar();
      // the value ended: close what it ends, up to the next value or the outermost close
      for (;;) {
        const close = open.at(-1);
        if (close === undefined) return;
        this.space();
        if (this.bytes[this.i] === COMMA) {
          this.i++;
          if (close === CLOSE_OBJECT) this.key();
          break;
        }
        this.expect(close);
        open.pop();
      }
    }
  }

  /** only whitespace is left */
  end(): void {
    this.space();
    if (this.i !== this.bytes.length) throw new NotJson(`unexpected byte at ${this.i}`);
  }

  private poll(): void {
    if (this.i < this.pollAt) return;
    this.pollAt = this.i + POLL_BYTES;
    if (this.deadline.expired()) throw WALK_EXPIRED;
  }

  private space(): void {
    while (isSpace(this.bytes[this.i])) this.i++;
  }

  private expect(c: number): void {
    this.space();
    if (this.bytes[this.i] !== c) throw new NotJson(`expected ${String.fromCharCode(c)} at ${this.i}`);
    this.i++;
  }

  /** after an opening bracket: true (and past it) when `close` follows at once */
  private closes(close: number): boolean {
    this.space();
    if (this.bytes[this.i] !== close) return false;
    this.i++;
    return true;
  }

  /** true when a comma comes next */
  private peekComma(): boolean {
    this.space();
    return this.bytes[this.i] === COMMA;
  }

  /** after an element or member: true past a comma, false past `close` */
  private separated(close: number): boolean {
    this.space();
    if (this.bytes[this.i] === COMMA) {
      this.i++;
      return true;
    }
    this.expect(close);
    return false;
  }

  /** a member's key and its colon */
  private key(): string {
    this.space();
    const start = this.i;
    if (this.bytes[start] !== QUOTE) throw new NotJson(`expected a key at ${start}`);
    const escaped = this.string();
    const key = escaped ? (JSON.parse(this.bytes.toString('utf8', start, this.i)) as string) : this.bytes.toString('utf8', start + 1, this.i - 1);
    this.expect(COLON);
    return key;
  }

  /** a string, a number or a literal */
  private scalar(): void {
    const c = this.bytes[this.i];
    if (c === QUOTE) this.string();
    else if (c === MINUS || isDigit(c)) this.number();
    else this.literal();
  }

  /** past a string; true when it holds an escape */
  private string(): boolean {
    const b = this.bytes;
    let i = this.i + 1;
    let escaped = false;
    for (;;) {
      const c = b[i];
      if (c === QUOTE) break;
      if (c === undefined || c < 0x20) throw new NotJson(`unterminated string or control character at ${i}`);
      if (c === BACKSLASH) {
        escaped = true;
        const e = b[i + 1];
        if (e === 0x75) {
          if (!(isHex(b[i + 2]) && isHex(b[i + 3]) && isHex(b[i + 4]) && isHex(b[i + 5]))) throw new NotJson(`bad \\u escape at ${i}`);
          i += 6;
        } else if (e !== undefined && SIMPLE_ESCAPES.has(e)) i += 2;
        else throw new NotJson(`bad escape at ${i}`);
      } else i++;
    }
    this.i = i + 1;
    return escaped;
  }

  /** -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
  private number(): void {
    const b = this.bytes;
    let i = this.i;
    if (b[i] === MINUS) i++;
    if (b[i] === 0x30) i++;
    else if (isDigit(b[i])) while (isDigit(b[i])) i++;
    else throw new NotJson(`bad number at ${i}`);
    if (b[i] === DOT) {
      i++;
      if (!isDigit(b[i])) throw new NotJson(`bad fraction at ${i}`);
      while (isDigit(b[i])) i++;
    }
    if (b[i] === 0x65 || b[i] === 0x45) {
      i++;
      if (b[i] === 0x2b || b[i] === MINUS) i++;
      if (!isDigit(b[i])) throw new NotJson(`bad exponent at ${i}`);
      while (isDigit(b[i])) i++;
    }
    this.i = i;
  }

  private literal(): void {
    for (const word of LITERALS) {
      const end = this.i + word.length;
      if (end <= this.bytes.length && this.bytes.compare(word, 0, word.length, this.i, end) === 0) {
        this.i += word.length;
        return;
      }
    }
    throw new NotJson(`unexpected byte at ${this.i}`);
  }
}
