import { pino, type Logger, type LevelWithSilent } from 'pino';

export type { Logger };

/** Every place a credential can sit in a logged object. */
const CREDENTIAL_HEADERS = [
  'authorization',
  'x-api-key',
  'api-key',
  'x-goog-api-key',
  'x-gw-key',
  'x-gw-provider-key',
  'x-gw-admin-key',
  'x-gw-config-secret',
  'cookie',
  'proxy-authorization',
];

const CREDENTIAL_FIELDS = ['api_key', 'secret', 'credential'];

/** pino redaction has no recursive wildcard: cover the top level and two levels of nesting. */
const nested = (path: string): string[] => [path, `*.${path}`, `*.*.${path}`];

export const REDACT_PATHS = [
  ...CREDENTIAL_HEADERS.flatMap((h) => nested(`headers["${h}"]`)),
  ...CREDENTIAL_FIELDS.flatMap(nested),
];

export function createLogger(level: LevelWithSilent, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? pino.destination({ sync: false }),
  );
}
