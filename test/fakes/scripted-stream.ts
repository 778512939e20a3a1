import type { ServerResponse } from 'node:http';
import { sleep } from './server.js';

/**
 * Writes a streamed answer as the model name scripts it: `stall_stream` sends
 * the first piece and goes silent (the gateway's idle timer must close it),
 * `break_stream` sends two and drops the connection, anything else sends every
 * piece and ends. `write` lets a fake cut its pieces across writes.
 */
export async function writeScriptedStream(
  res: ServerResponse,
  model: string,
  headers: Record<string, string>,
  pieces: ReadonlyArray<string | Uint8Array>,
  write: (piece: string | Uint8Array) => void = (p) => res.write(p),
): Promise<void> {
  res.writeHead(200, headers);
  const [first, second, ...rest] = pieces;
  if (first !== undefined) write(first);
  if (model === 'stall_stream') return;
  if (second !== undefined) write(second);
  if (model === 'break_stream') {
    // let the pieces reach the wire first: destroy() discards unflushed writes
    await sleep(50);
    res.socket?.destroy();
    return;
  }
  for (const piece of rest) {
    await sleep(1);
    write(piece);
  }
  res.end();
}
