import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { freePort } from './wait.js';

export interface PrivateRedis {
  url: string;
  port: number;
  /** SIGKILL: the server and everything it held are gone */
  stop(): Promise<void>;
  /** a new server on the same port, empty (no persistence) */
  restart(): Promise<void>;
  /** SIGSTOP: the server holds its connections and answers nothing (this test's own server, never the shared one) */
  pause(): void;
  /** SIGCONT after pause() */
  resume(): void;
}

/**
 * A redis-server of the test's own on a free loopback port, without
 * persistence: a test may kill, restart or flush it, which it must never do
 * to the shared one.
 */
export async function privateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let proc: ChildProcess | undefined;
  const launch = async () => {
    proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    const probe = new Redis({ port, lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: null });
    probe.on('error', () => undefined); // refused until the server is up
    await probe.connect().catch(() => undefined);
    await probe.ping();
    probe.disconnect();
  };
  const stop = async () => {
    // a server killed by a signal has no exit code, only its signal: stopping it again must not wait for an exit already past
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = once(proc, 'exit');
    proc.kill('SIGKILL');
    await exited;
  };
  await launch();
  const signal = (s: NodeJS.Signals) => {
    if (proc && proc.exitCode === null && proc.signalCode === null) proc.kill(s);
  };
  return { url: `redis://127.0.0.1:${port}`, port, stop, restart: launch, pause: () => signal('SIGSTOP'), resume: () => signal('SIGCONT') };
}
