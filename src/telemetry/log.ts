import { pino, type Logger, type LevelWithSilent } from 'pino';
import { CREDENTIAL_HEADERS } from '../http/credentials.js';
import { AccessLog } from './access-log.js';

export type { Logger };


const CREDENTIAL_FIELDS = ['api_key', 'secret', 'credential'];

/** pino redaction has no recursive wildcard: cover the top level and two levels of nesting. */
const nested = (path: string): string[] => [path, `*.${path}`, `*.*.${path}`];

export const REDACT_PATHS = [
  ...CREDENTIAL_HEADERS.flatMap((h) => nested(`headers["${h}"]`)),
  ...CREDENTIAL_FIELDS.flatMap(nested),
];

/** Log lines are written in batches of this many bytes, and at least every FLUSH_MS. */
const BATCH_BYTES = 4096;
const FLUSH_MS = 1000;

export interface Logging {
  /** the general logger: every line passes the credential redaction */
  log: Logger;
  /** the access line, one per answered request, to the same destination */
  access: AccessLog;
  /** hands batched lines to the destination, which may still buffer them */
  flushBatches(): void;
  /** writes out what is batched and stops the flush timer; call on shutdown */
  flush(): void;
}

export function createLogging(level: LevelWithSilent, destination?: pino.DestinationStream): Logging {
  const dest = destination ?? pino.destination({ sync: false, minLength: BATCH_BYTES });
  const options = { level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime };
  const log = pino({ ...options, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, dest);
  const access = new AccessLog(dest, log.isLevelEnabled('info'));
  const timer = setInterval(() => log.flush(), FLUSH_MS);
  timer.unref();
  return {
    log,
    access,
    flushBatches() {
      access.flush();
    },
    flush() {
      clearInterval(timer);
      access.flush();
      log.flush();
    },
  };
}

/** The general logger alone, for tools and tests. */
export function createLogger(level: LevelWithSilent, destination?: pino.DestinationStream): Logger {
  return createLogging(level, destination).log;
}
