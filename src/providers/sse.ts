const LF = 0x0a;
/** usage events are small; an unfinished line longer than this is not carried between chunks */
const MAX_LINE_BYTES = 256 * 1024;

/**
 * Incremental SSE reader: finds complete lines across chunk boundaries and
 * hands `data:` payloads that contain one of `markers` to `onData`. Only the tail of
 * an unfinished line is carried between chunks, never the whole stream.
 */
export class SseScanner {
  private carry: Buffer | undefined;
  private readonly markers: readonly Buffer[];

  constructor(
    markers: readonly string[],
    private readonly onData: (payload: string) => void,
  ) {
    this.markers = markers.map((m) => Buffer.from(m, 'latin1'));
  }

  push(chunk: Buffer): void {
    // most chunks carry no marker at all: then only an unfinished last line matters
    if (!this.carry && !this.markers.some((m) => chunk.includes(m))) {
      const nl = chunk.lastIndexOf(LF);
      if (nl !== chunk.length - 1 && chunk.length - nl - 1 <= MAX_LINE_BYTES) this.carry = Buffer.from(chunk.subarray(nl + 1));
      return;
    }
    let buf = chunk;
    if (this.carry) {
      buf = Buffer.concat([this.carry, chunk]);
      this.carry = undefined;
    }
    let start = 0;
    for (let nl = buf.indexOf(LF, start); nl !== -1; nl = buf.indexOf(LF, start)) {
      this.line(buf, start, nl);
      start = nl + 1;
    }
    // a line this long carries no usage: drop it rather than re-join it on every chunk
    if (start < buf.length && buf.length - start <= MAX_LINE_BYTES) this.carry = Buffer.from(buf.subarray(start));
  }

  private line(buf: Buffer, start: number, end: number): void {
    // `data:` lines only; skip the rest without decoding them
    if (end - start < 6 || !isDataField(buf, start)) return;
    const line = buf.subarray(start, end);
    if (!this.markers.some((m) => line.includes(m))) return;
    const text = buf.toString('utf8', start + 5, buf[end - 1] === 0x0d ? end - 1 : end).trim();
    this.onData(text);
  }
}

/** `data:` at `at`, compared byte by byte (no string per line) */
const isDataField = (b: Buffer, at: number): boolean => b[at] === 0x64 && b[at + 1] === 0x61 && b[at + 2] === 0x74 && b[at + 3] === 0x61 && b[at + 4] === 0x3a;

export const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
