import { EventStreamCodec, type Message } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';

/** AWS event-stream framing: a 12-byte prelude (total length, headers length, CRC), headers, payload, CRC. */
const PRELUDE_BYTES = 12;

const codec = new EventStreamCodec(toUtf8, fromUtf8);

/**
 * Splits an application/vnd.amazon.eventstream body into whole frames as the
 * chunks arrive, carrying only the unfinished frame between chunks. `wanted`
 * looks at a frame's raw header bytes so uninteresting frames are never decoded.
 */
export class EventStreamScanner {
  private carry: Buffer | undefined;

  constructor(
    private readonly wanted: (headers: Buffer) => boolean,
    private readonly onMessage: (message: Message) => void,
  ) {}

  push(chunk: Buffer): void {
    let buf = chunk;
    if (this.carry) {
      buf = Buffer.concat([this.carry, chunk]);
      this.carry = undefined;
    }
    let start = 0;
    while (buf.length - start >= PRELUDE_BYTES) {
      const total = buf.readUInt32BE(start);
      if (total < PRELUDE_BYTES + 4) return; // not an event stream: nothing more can be read from it
      if (buf.length - start < total) break;
      const headersEnd = start + PRELUDE_BYTES + buf.readUInt32BE(start + 4);
      if (this.wanted(buf.subarray(start + PRELUDE_BYTES, headersEnd))) this.decode(buf.subarray(start, start + total));
      start += total;
    }
    if (start < buf.length) this.carry = Buffer.from(buf.subarray(start));
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
