/**
 * Where the complete events of a streamed reply end. The relay forwards only
 * whole events and holds an unfinished one back, so when the upstream fails
 * or stalls mid-event the gateway's error event follows a complete event
 * instead of being glued onto half of one (which SDKs cannot parse).
 */
export type Framing = (buf: Buffer) => number;

const LF_LF = Buffer.from('\n\n');
const LF_CRLF = Buffer.from('\n\r\n');

/** SSE: an event ends at a blank line, `\n\n` or `\r\n\r\n`. */
export const sseFraming: Framing = (buf) => {
  const n = buf.length;
  // the common case: the chunk ends exactly at an event boundary
  if (n >= 2 && buf[n - 1] === 0x0a && (buf[n - 2] === 0x0a || (buf[n - 2] === 0x0d && buf[n - 3] === 0x0a))) return n;
  const lf = buf.lastIndexOf(LF_LF);
  const crlf = buf.lastIndexOf(LF_CRLF);
  return Math.max(lf === -1 ? 0 : lf + 2, crlf === -1 ? 0 : crlf + 3);
};

/** AWS event stream: each frame starts with its total length (big-endian uint32, at least 16). */
export const eventStreamFraming: Framing = (buf) => {
  let at = 0;
  while (buf.length - at >= 4) {
    const total = buf.readUInt32BE(at);
    if (total < 16 || at + total > buf.length) break;
    at += total;
  }
  return at;
};

export function framingFor(contentType: string): Framing {
  return contentType.startsWith('application/vnd.amazon.eventstream') ? eventStreamFraming : sseFraming;
}
