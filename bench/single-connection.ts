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

/** A reply with its timing, in milliseconds from the moment the request was handed to the socket. */
export interface TimedReply extends Reply {
  firstByteMs: number;
  totalMs: number;
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
  private waiting: ((r: TimedReply) => void) | undefined;
  private failed: ((e: Error) => void) | undefined;
  private sentAt = 0;
  private firstByteAt: number | undefined;

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => {
      const now = performance.now();
      this.firstByteAt ??= now;
      this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
      const reply = parseReply(this.buf);
      if (!reply || !this.waiting) return;
      this.buf = Buffer.alloc(0);
      const done = this.waiting;
      this.waiting = undefined;
      done({ ...reply, firstByteMs: this.firstByteAt - this.sentAt, totalMs: now - this.sentAt });
    });
    const fail = (e: Error) => this.failed?.(e);
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('connection closed')));
  }

  /** the server closed it (uWS closes a keep-alive connection idle for 10 s) or it failed */
  get closed(): boolean {
    return this.socket.destroyed;
  }

  static open(port: number): Promise<OneConnection> {
    return new Promise((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => resolve(new OneConnection(s)));
      s.once('error', reject);
    });
  }

  send(request: Buffer): Promise<TimedReply> {
    return new Promise((resolve, reject) => {
      // a write to a closed socket neither fails nor answers: without this the caller waited for ever
      if (this.closed) return reject(new Error('connection closed'));
      this.waiting = resolve;
      this.failed = reject;
      this.firstByteAt = undefined;
      this.socket.write(request);
      this.sentAt = performance.now();
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

/** Medians over sequential requests on one connection, in milliseconds. */
export interface SingleConnection {
  /** request written to the whole reply read */
  totalMs: number;
  /** request written to the first byte of the reply */
  firstByteMs: number;
  /** first byte to the end of the reply: the time a stream's later events take */
  afterFirstByteMs: number;
}

/** One client of the interleaved measurement: a connection to one target and the request it repeats. */
interface Timed {
  port: number;
  conn: OneConnection;
  request: Buffer;
  total: number[];
  first: number[];
  after: number[];
}

/** Sequential requests on one connection; each reply must be a 200. */
async function timeRequests(c: Timed, count: number, record: boolean): Promise<void> {
  for (let i = 0; i < count; i++) {
    // idle while the other targets took their turn, the connection may have been closed: a new one, before the request's clock starts
    if (c.conn.closed) c.conn = await OneConnection.open(c.port);
    const r = await c.conn.send(c.request);
    if (r.status !== 200) throw new Error(`status ${r.status}: ${r.body.toString().slice(0, 200)}`);
    if (!record) continue;
    c.total.push(r.totalMs);
    c.first.push(r.firstByteMs);
    c.after.push(r.totalMs - r.firstByteMs);
  }
}

/**
 * Timings of `count` sequential requests per target (after `warmup` untimed
 * ones), one keep-alive connection each, taken in `rounds` alternating slices
 * so that whatever else the machine does meanwhile weighs on every target
 * alike and cancels out of "added vs direct".
 */
export async function singleConnections(targets: { port: number; request: Buffer }[], count: number, warmup: number, rounds = 10): Promise<SingleConnection[]> {
  const clients: Timed[] = [];
  try {
    for (const t of targets) clients.push({ port: t.port, conn: await OneConnection.open(t.port), request: t.request, total: [], first: [], after: [] });
    for (const c of clients) await timeRequests(c, warmup, false);
    for (let round = 0; round < rounds; round++) {
      const slice = Math.floor((count * (round + 1)) / rounds) - Math.floor((count * round) / rounds);
      for (const c of clients) await timeRequests(c, slice, true);
    }
    return clients.map((c) => ({ totalMs: median(c.total), firstByteMs: median(c.first), afterFirstByteMs: median(c.after) }));
  } finally {
    for (const c of clients) c.conn.close();
  }
}
