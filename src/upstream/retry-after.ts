import type { HeaderList } from '../http/types.js';

/** Delta-seconds: digits only (RFC 9110); anything else is an HTTP date or nothing. */
const SECONDS = /^\d+$/;
/** `retry-after-ms` (OpenAI, Azure OpenAI): a number of milliseconds, possibly fractional. */
const MILLISECONDS = /^\d+(?:\.\d+)?$/;

/**
 * How long a vendor's failure asks to be left alone, in ms, from its headers:
 * `retry-after-ms` when present (the finer hint), else `Retry-After` as
 * delta-seconds or an HTTP date (counted from `now`, this replica's clock).
 * Undefined when neither is there or parses, or the date has passed.
 */
export function retryAfterMs(headers: HeaderList, now: number): number | undefined {
  let seconds: string | undefined;
  for (const [name, value] of headers) {
    if (name === 'retry-after-ms') {
      const v = value.trim();
      if (MILLISECONDS.test(v)) return Math.ceil(Number(v));
    } else if (name === 'retry-after') seconds = value.trim();
  }
  if (seconds === undefined) return undefined;
  if (SECONDS.test(seconds)) return Number(seconds) * 1000;
  const at = Date.parse(seconds);
  return Number.isNaN(at) || at <= now ? undefined : at - now;
}
