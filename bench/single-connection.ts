import { connect, type Socket } from 'node:net';

/**
 * Sequential requests on one keep-alive connection over a raw socket, timed
 * with microsecond resolution (autocannon's histogram is too coarse for the
 * sub-millisecond differences this figure is about). The client is the same
 * for every target, so its own cost cancels out in "added vs direct".
 */

export interface Reply {
  status: number;
  body: Buffer;
}

const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');

/** Where a chunked body ends (index after the last-chunk CRLF), or -1 when incomplete. */
function chunkedEnd(buf: Buffer, start: number): number {
  let i = start;
  for (;;) {
    const eol = buf.indexOf(CRLF, i);
    if (eol < 0) return -1;
    const size = parseInt(buf.toString('latin1', i, eol), 16);
    if (size === 0) return buf.length >= eol + 4 ? eol + 4 : -1;
    i = eol + 2 + size + 2;
    if (i > buf.length) return -1;
  }
}

function dechunk(buf: Buffer, start: number): Buffer {
  const parts: Buffer[] = [];
  let i = start;
  for (;;) {
    const eol = buf.indexOf(CRLF, i);
    const size = parseInt(buf.toString('latin1', i, eol), 16);
    if (size === 0) return Buffer.concat(parts);
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    i = eol + 2 + size + 2;
  }
}

/** Parses one complete response from the front of buf, or undefined when more bytes are needed. */
function parseReply(buf: Buffer): Reply | undefined {
  const head = buf.indexOf(HEADER_END);
  if (head < 0) return undefined;
  const headers = buf.toString('latin1', 0, head).toLowerCase();
  const status = Number(headers.slice(9, 12));
  const bodyStart = head + 4;
  const length = /\r\ncontent-length: *(\d+)/.exec(headers);
  if (length) {
    const end = bodyStart + Number(length[1]);
    return buf.length >= end ? { status, body: buf.subarray(bodyStart, end) } : undefined;
  }
  if (/\r\ntransfer-encoding: *chunked/.test(headers)) {
    return chunkedEnd(buf, bodyStart) < 0 ? undefined : { status, body: dechunk(buf, bodyStart) };
  }
  throw new Error(`response without a length: ${headers.split('\r\n')[0]}`);
}

export class OneConnection {
  private buf: Buffer = Buffer.alloc(0);
  private waiting: ((r: Reply) => void) | undefined;
  private failed: ((e: Error) => void) | undefined;

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => {
      this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
      const reply = parseReply(this.buf);
      if (!reply || !this.waiting) return;
      this.buf = Buffer.alloc(0);
      const done = this.waiting;
      this.waiting = undefined;
      done(reply);
    });
    const fail = (e: Error) => this.failed?.(e);
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('connection closed')));
  }

  static open(port: number): Promise<OneConnection> {
    return new Promise((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => resolve(new OneConnection(s)));
      s.once('error', reject);
    });
  }

  send(request: Buffer): Promise<Reply> {
    return new Promise((resolve, reject) => {
      this.waiting = resolve;
      this.failed = reject;
      this.socket.write(request);
    });
  }

  close(): void {
    this.socket.destroy();
  }
}

export function rawRequest(path: string, headers: Record<string, string>, body: string): Buffer {
  const head = [`POST ${path} HTTP/1.1`, 'host: 127.0.0.1', `content-length: ${Buffer.byteLength(body)}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  return Buffer.from(`${head.join('\r\n')}\r\n\r\n${body}`);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

/** Median round trip in milliseconds of `count` sequential requests, after `warmup` untimed ones. */
export async function singleConnectionMedian(port: number, request: Buffer, count: number, warmup: number): Promise<number> {
  const conn = await OneConnection.open(port);
  try {
    for (let i = 0; i < warmup; i++) await conn.send(request);
    const times: number[] = [];
    for (let i = 0; i < count; i++) {
      const t0 = performance.now();
      const r = await conn.send(request);
      times.push(performance.now() - t0);
      if (r.status !== 200) throw new Error(`status ${r.status}: ${r.body.toString().slice(0, 200)}`);
    }
    return median(times);
  } finally {
    conn.close();
  }
}
