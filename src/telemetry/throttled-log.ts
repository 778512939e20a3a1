/** The longest a repeated warning stays silent; the one line per interval carries how many were held back. */
export const THROTTLE_INTERVAL_MS = 10_000;

interface WarnSink {
  warn(obj: object, msg: string): void;
}

/**
 * A warning that may fire on every request while a dependency is down (Redis
 * stalled: thousands a second). The first is logged at once; the rest of the
 * interval are counted, and one line at the interval's end carries the last
 * one's fields with `suppressed`, the number held back since the previous
 * line. A burst that ends is reported in full within one interval.
 */
export function throttledWarn(log: WarnSink, msg: string, intervalMs = THROTTLE_INTERVAL_MS): (obj: object) => void {
  let lastLineAt = -Infinity;
  let suppressed = 0;
  let latest: object = {};
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    timer = undefined;
    lastLineAt = Date.now();
    log.warn({ ...latest, suppressed }, msg);
    suppressed = 0;
  };
  return (obj) => {
    const now = Date.now();
    if (timer === undefined && now - lastLineAt >= intervalMs) {
      lastLineAt = now;
      log.warn(obj, msg);
      return;
    }
    suppressed++;
    latest = obj;
    // never keeps the process alive: a count lost at exit is only a count
    timer ??= setTimeout(flush, Math.max(0, lastLineAt + intervalMs - now)).unref();
  };
}
