import type { ServerResponse } from 'node:http';
import { sleep } from './server.js';

const SCRIPTS = ['truncated', 'stall_stream', 'break_stream', 'overloaded_stream'] as const;
export type Script = (typeof SCRIPTS)[number];

/**
 * The behaviour a model name scripts: the bare word (`stall_stream`) or the
 * word after a catalog name (`claude-sonnet-4-5-stall_stream`), so a call the
 * gateway routes by the catalog and translates can be scripted too.
 */
export function scriptOf(model: string): Script | undefined {
  return SCRIPTS.find((s) => model === s || model.endsWith(`-${s}`));
}

/**
 * Writes a streamed answer as the model name scripts it (see scriptOf): `stall_stream` sends
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
  const script = scriptOf(model);
  if (script === 'stall_stream') return;
  if (second !== undefined) write(second);
  if (script === 'break_stream') {
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
