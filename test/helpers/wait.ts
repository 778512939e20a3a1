import { once } from 'node:events';
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

/** A loopback port nothing listens on right now (for a server the test starts later, or one that must refuse). */
export async function freePort(): Promise<number> {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as { port: number };
  probe.close();
  await once(probe, 'close');
  return port;
}
