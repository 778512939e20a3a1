import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';

/** How long a test waits for something that should happen at once: generous, since a loaded machine is slow and waiting costs nothing when it does happen. */
export const PATIENCE_MS = 10_000;

/**
 * Polls until `check` holds. Tests wait on a condition, never on a guessed
 * delay, so they neither fail on a slow machine nor wait longer than needed.
 */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = PATIENCE_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Where Linux picks the ports of `listen(0)` and of outgoing connections; a port below it is taken only by whoever names it. */
async function ephemeralRangeStart(): Promise<number> {
  const range = await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').catch(() => '32768');
  return Number.parseInt(range, 10) || 32768;
}

const handedOut = new Set<number>();

async function canListen(port: number): Promise<boolean> {
  const probe = createServer();
  probe.listen(port, '127.0.0.1');
  const opened = await Promise.race([once(probe, 'listening').then(() => true), once(probe, 'error').then(() => false)]);
  if (opened) {
    probe.close();
    await once(probe, 'close');
  }
  return opened;
}

/**
 * A loopback port nothing listens on, for a server the test starts later or
 * one that must refuse. It comes from below the ephemeral range: a port
 * `listen(0)` had just handed out and freed could go next to a fake or a
 * gateway started after it, and a "refused" destination would then answer.
 */
export async function freePort(): Promise<number> {
  const top = await ephemeralRangeStart();
  const bottom = Math.max(1024, top - 20_000);
  if (top - bottom < 1000) throw new Error(`the ephemeral port range starts at ${top}: no room below it for the tests' ports`);
  for (;;) {
    const port = bottom + Math.floor(Math.random() * (top - bottom));
    if (handedOut.has(port) || !(await canListen(port))) continue;
    handedOut.add(port);
    return port;
  }
}
