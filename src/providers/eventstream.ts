import { EventStreamCodec, type Message } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';

/** AWS event-stream framing: a 12-byte prelude (total length, headers length, CRC), headers, payload, CRC. */
const PRELUDE_BYTES = 12;
/** AWS caps a message at 16 MiB of payload plus 128 KiB of headers; anything longer is not a frame */
const MAX_FRAME_BYTES = 16 * 1024 * 1024 + 128 * 1024 + PRELUDE_BYTES + 4;

const codec = new EventStreamCodec(toUtf8, fromUtf8);

/**
 * Splits an application/vnd.amazon.eventstream body into whole frames as the
 * chunks arrive. Only the unfinished frame is kept between chunks, as a list
 * joined once it is complete (a large frame is never re-copied per chunk).
 * `wanted` looks at a frame's raw header bytes so uninteresting frames are never decoded.
 */
export class EventStreamScanner {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** bytes the unfinished frame needs before it can be read further */
  private need = 0;
  /** set on bytes that cannot be a frame: nothing after them can be located reliably */
  private lost = false;

  constructor(
    private readonly wanted: (headers: Buffer) => boolean,
    private readonly onMessage: (message: Message) => void,
  ) {}

  push(chunk: Buffer): void {
    if (this.lost) return;
    let buf = chunk;
    if (this.pendingBytes > 0) {
      this.pending.push(chunk);
      this.pendingBytes += chunk.length;
      if (this.pendingBytes < this.need) return;
      buf = Buffer.concat(this.pending, this.pendingBytes);
      this.pending = [];
      this.pendingBytes = 0;
    }
    let start = 0;
    while (buf.length - start >= PRELUDE_BYTES) {
      const total = buf.readUInt32BE(start);
      if (total < PRELUDE_BYTES + 4 || total > MAX_FRAME_BYTES) {
        this.lost = true;
        return;
      }
      if (buf.length - start < total) break;
      const headersEnd = start + PRELUDE_BYTES + buf.readUInt32BE(start + 4);
      if (this.wanted(buf.subarray(start + PRELUDE_BYTES, headersEnd))) this.decode(buf.subarray(start, start + total));
      start += total;
    }
    if (start === buf.length) return;
    const rest = Buffer.from(buf.subarray(start));
    this.pending = [rest];
    this.pendingBytes = rest.length;
    this.need = rest.length >= PRELUDE_BYTES ? rest.readUInt32BE(0) : PRELUDE_BYTES;
  }

  private decode(frame: Buffer): void {
    try {
      this.onMessage(codec.decode(frame));
    } catch {
      // a frame with a bad checksum carries nothing we can trust; the caller sees it as it was sent
    }
  }
}

/** Bytes of one `:message-type: exception` frame, with valid prelude and message CRCs. */
export function exceptionFrame(exceptionType: string, payload: string): Uint8Array {
  return codec.encode({
    headers: {
      ':message-type': { type: 'string', value: 'exception' },
      ':exception-type': { type: 'string', value: exceptionType },
      ':content-type': { type: 'string', value: 'application/json' },
    },
    body: fromUtf8(payload),
  });
}
