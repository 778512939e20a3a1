import { connect, type Socket } from 'node:net';
import { PATIENCE_MS } from './wait.js';

/** What came back on one raw connection. */
export interface RawReply {
  text: string;
  /** the server closed the connection */
  closed: boolean;
  /** ms from the first byte written to the end (close, `until` or the wait) */
  ms: number;
}

export interface RawOptions {
  /** resolve as soon as what was read satisfies this */
  until?: (text: string) => boolean;
  /** resolve after this long with the connection still open */
  waitMs?: number;
  /** written after the first part, `gapMs` later (a body sent late, a slow client) */
  then?: { gapMs: number; payload: string | Buffer };
}

/** Writes `payload` on a fresh loopback connection; resolves on close, when `until` holds, or after `waitMs`. */
export function rawExchange(port: number, payload: string | Buffer, { until, waitMs = PATIENCE_MS, then }: RawOptions = {}): Promise<RawReply> {
  return new Promise((resolve) => {
    const socket: Socket = connect(port, '127.0.0.1');
    const parts: Buffer[] = [];
    const started = performance.now();
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(later);
      socket.destroy();
      resolve({ text: Buffer.concat(parts).toString('latin1'), closed, ms: performance.now() - started });
    };
    const timer = setTimeout(() => finish(false), waitMs);
    const later = then ? setTimeout(() => socket.write(then.payload), then.gapMs) : undefined;
    socket.on('data', (d: Buffer) => {
      parts.push(d);
      if (until?.(Buffer.concat(parts).toString('latin1'))) finish(false);
    });
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
    socket.write(payload);
  });
}

/** The status of the first answer in `text`, or undefined when there is none. */
export const firstStatus = (text: string): number | undefined => {
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
  return m ? Number(m[1]) : undefined;
};

/** One header of the first answer in `text` (lower-cased name). */
export const headerOf = (text: string, name: string): string | undefined => {
  const head = text.slice(0, text.indexOf('\r\n\r\n') === -1 ? text.length : text.indexOf('\r\n\r\n'));
  const m = new RegExp(`^${name}: *(.*?)\\r?$`, 'im').exec(head);
  return m?.[1];
};

/** The body of the first answer in `text` (after the head; a Content-Length body). */
export const bodyOf = (text: string): string => {
  const at = text.indexOf('\r\n\r\n');
  return at === -1 ? '' : text.slice(at + 4);
};

/** A request head with these header lines, ended by the blank line. */
export const requestHead = (method: string, path: string, ...headers: string[]): string => [`${method} ${path} HTTP/1.1`, 'Host: gw', ...headers, '', ''].join('\r\n');
