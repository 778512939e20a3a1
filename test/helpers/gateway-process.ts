import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { ADMIN_KEY } from './gateway.js';

export const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

/** A gateway in a process of its own (a replica the test can SIGKILL, or whose memory it can read in /proc). */
export interface GatewayProcess {
  child: ChildProcess;
  /** the port named by the first 'gateway listening' line */
  port: number;
  lines: string[];
  stderr(): string;
  /** resolves with the exit code once the process is gone */
  exited: Promise<number | null>;
}

/** The test's environment without any GW_ variable, so only what a test names configures its gateway. */
export const envWithoutGw = (): Record<string, string | undefined> => Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GW_')));

/** `node --import tsx src/main.ts` with only the given GW_ variables; resolves once a replica listens. */
export async function spawnGateway(env: Record<string, string>, nodeArgs: readonly string[] = []): Promise<GatewayProcess> {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', MAIN], {
    env: { ...envWithoutGw(), GW_HOST: '127.0.0.1', GW_PORT: '0', GW_ADMIN_KEY: ADMIN_KEY, GW_SHUTDOWN_GRACE_S: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const lines: string[] = [];
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const port = new Promise<number>((resolve, reject) => {
    let partial = '';
    child.stdout?.on('data', (d: Buffer) => {
      const parts = (partial + d.toString()).split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        lines.push(line);
        if (line.includes('"msg":"gateway listening"')) resolve((JSON.parse(line) as { port: number }).port);
      }
    });
    void exited.then((code) => reject(new Error(`gateway exited (${code}) before listening: ${err}`)));
  });
  return { child, port: await port, lines, stderr: () => err, exited };
}

/** SIGTERM, then waits for the exit; a process already gone is left alone. */
export async function stopGateway(gw: GatewayProcess): Promise<void> {
  if (gw.child.exitCode !== null || gw.child.signalCode !== null) return;
  gw.child.kill('SIGTERM');
  await gw.exited;
}
