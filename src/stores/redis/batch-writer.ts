import { redisClient, type RedisClient, type RedisTarget } from './client.js';

/**
 * What the gateway's batched Redis writers (telemetry rows, scorecard
 * samples) share: their connection, their accounting of what they had to
 * drop, and their drain on close. Each sends one batch at a time, off the
 * request path, and sends a batch again when Redis did not answer it.
 */

/** a batch Redis has not answered in this long is sent again (each writer's script makes that safe) */
const COMMAND_TIMEOUT_MS = 2000;
/** dropped items are logged at most once per interval */
const DROP_LOG_MS = 10_000;

/**
 * A writer's own connection, with its script: no offline queue and no retry
 * of a command (a batch that failed is the writer's to send again),
 * reconnecting every half second while Redis is away.
 */
export function writerConnection<R extends RedisClient>(target: RedisTarget, name: string, command: string, lua: string): R {
  const redis = redisClient(target, { connectionName: name, commandTimeout: COMMAND_TIMEOUT_MS, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 500 });
  redis.defineCommand(command, { lua });
  // reconnects are retried by the strategy above; errors surface through the batches
  redis.on('error', () => undefined);
  return redis as R;
}

export interface DropLogger {
  warn(obj: object, msg: string): void;
}

/** Counts what a writer dropped, and says so at most once per interval (and once more on close). */
export class DropLog {
  private sinceLog = 0;
  private lastLog = 0;

  constructor(
    private readonly log: DropLogger,
    private readonly message: string,
    private readonly onDropped: (count: number) => void,
    private readonly buffered: () => number,
  ) {}

  dropped(count: number): void {
    this.sinceLog += count;
    this.onDropped(count);
    this.report(false);
  }

  report(force: boolean): void {
    const now = Date.now();
    if (this.sinceLog === 0 || (!force && now - this.lastLog < DROP_LOG_MS)) return;
    this.log.warn({ dropped: this.sinceLog, buffered: this.buffered() }, this.message);
    this.sinceLog = 0;
    this.lastLog = now;
  }
}

/** Flushes until nothing is held or `graceMs` has passed, a flush period apart; what is left is the caller's to drop. */
export async function drain(graceMs: number, periodMs: number, held: () => number, flush: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + graceMs;
  while (held() > 0 && Date.now() < deadline) {
    await flush();
    if (held() > 0) await new Promise((r) => setTimeout(r, periodMs));
  }
}
