import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request exactly as a fake vendor received it. */
export interface Recorded {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  rawHeaders: string[];
  body: Buffer;
  /** set when the caller closed the connection before the response ended (an abort reached the vendor) */
  interrupted?: boolean;
}

export type FakeHandler = (req: Recorded, res: ServerResponse) => void | Promise<void>;

export interface FakeVendor {
  origin: string;
  port: number;
  /** every request received, in order */
  received: Recorded[];
  /** raw bytes of every connection, for smuggling checks */
  rawConnections: Buffer[][];
  close(): Promise<void>;
}

/** A loopback HTTP server that records what it receives and answers through `handler`. */
export async function startFakeVendor(handler: FakeHandler): Promise<FakeVendor> {
  const received: Recorded[] = [];
  const rawConnections: Buffer[][] = [];
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const rec: Recorded = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, rawHeaders: req.rawHeaders, body: Buffer.concat(parts) };
      received.push(rec);
      res.on('close', () => {
        if (!res.writableEnded) rec.interrupted = true;
      });
      if (req.headers['x-fake-cut'] === 'second-write') cutInSecondWrite(res);
      Promise.resolve(handler(rec, res)).catch((err: unknown) => {
        res.statusCode = 500;
        res.end(String(err));
      });
    });
  });
  server.on('connection', (socket) => {
    const chunks: Buffer[] = [];
    rawConnections.push(chunks);
    socket.on('data', (c: Buffer) => chunks.push(c));
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    received,
    rawConnections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Any fake, any wire format: the second body write goes out only half, then
 * the connection drops, so an event or frame is cut in the middle (as a
 * vendor failing mid-event does). Later writes and the end are swallowed.
 */
function cutInSecondWrite(res: ServerResponse): void {
  const write = res.write.bind(res) as (chunk: string | Uint8Array) => boolean;
  let writes = 0;
  let cut = false;
  res.write = ((chunk: string | Uint8Array) => {
    if (cut) return true;
    if (++writes < 2) return write(chunk);
    cut = true;
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk);
    write(bytes.subarray(0, Math.max(1, bytes.length >> 1)));
    // let the half reach the wire before the connection drops
    setTimeout(() => res.socket?.destroy(), 50);
    return true;
  }) as ServerResponse['write'];
  res.end = ((..._args: unknown[]) => res) as ServerResponse['end'];
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/**
 * A vendor's scripted delay. Unref'd: a delay left running after the gateway
 * hung up (`slow_3000` behind an aborted call) must not hold the test process
 * open once its tests are done; while a call is live its socket keeps it open.
 */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());
