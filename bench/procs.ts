import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { cpus } from 'node:os';

/**
 * CPU placement. On a 2-core box the load generator (this process: autocannon
 * and the single-connection client) gets core 0 and every server gets core 1,
 * so the load generator never steals from what is measured. The caveat: when a
 * proxy is measured, the fake upstream shares its core, so proxied req/s
 * includes the fake's work; CPU per request is read per process and does not.
 * With 3+ cores the fake upstream gets a core of its own.
 */
export interface Placement {
  loadgen: string | undefined;
  target: string | undefined;
  upstream: string | undefined;
}

export function placement(): Placement {
  const n = cpus().length;
  if (n < 2) return { loadgen: undefined, target: undefined, upstream: undefined };
  return { loadgen: '0', target: '1', upstream: n >= 3 ? '2' : '1' };
}

/** Pins every thread of this process (autocannon runs in it). */
export function pinSelf(cpu: string | undefined): void {
  if (cpu !== undefined) execFileSync('taskset', ['-a', '-p', '-c', cpu, String(process.pid)], { stdio: 'ignore' });
}

export interface Spawned {
  proc: ChildProcess;
  pid: number;
  /** SIGTERM, then SIGKILL after a grace period; resolves once it exited */
  stop(graceMs?: number): Promise<void>;
}

/** Starts a command pinned to `cpu` (taskset execs it, so the pid is the command's). */
export function spawnPinned(cpu: string | undefined, command: string, args: string[], opts: { env?: NodeJS.ProcessEnv; stdout?: number | 'ignore' | 'pipe'; cwd?: string } = {}): Spawned {
  const [cmd, argv] = cpu === undefined ? [command, args] : ['taskset', ['-c', cpu, command, ...args]];
  const proc = spawn(cmd, argv, { env: opts.env ?? process.env, cwd: opts.cwd, stdio: ['ignore', opts.stdout ?? 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  proc.once('exit', (code, signal) => {
    if (code && code !== 0) process.stderr.write(`bench: ${command} exited ${code ?? signal}\n${stderr}\n`);
  });
  if (proc.pid === undefined) throw new Error(`cannot start ${command}`);
  return {
    proc,
    pid: proc.pid,
    async stop(graceMs = 5000) {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (addr && typeof addr === 'object' ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/** Resolves once something accepts TCP connections on the port. */
export async function waitForPort(port: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on ${port} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

function children(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** user+system CPU of one process (all its threads), in microseconds */
function processCpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // fields after the parenthesised command name; utime and stime are fields 14 and 15
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLK_TCK;
}

/** CPU of a process and its direct children (nginx's master and workers), in microseconds. */
export function cpuMicros(pid: number): number {
  return [pid, ...children(pid)].reduce((sum, p) => sum + processCpuMicros(p), 0);
}

/** what `command args` prints, stdout or stderr (nginx -v writes to stderr) */
export function commandOutput(command: string, args: string[]): string {
  const r = spawnSync(command, args, { encoding: 'utf8' });
  return `${r.stdout ?? ''}${r.stderr ?? ''}`.trim() || 'unknown';
}
