/** What `within` answers when the promise did not settle in time. */
export const LATE: unique symbol = Symbol('late');

/**
 * The promise's outcome, or LATE once `ms` have passed first. The promise
 * goes on: the caller decides what a late answer still does. Used where the
 * request path must not wait on a slow store (docs/operations.md, Redis slow).
 */
export function within<T>(p: Promise<T>, ms: number): Promise<T | typeof LATE> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(LATE), ms);
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}
