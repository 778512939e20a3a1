import { GatewayError } from '../errors.js';
import type { StageClock } from '../http/stages.js';

/**
 * Bounds a store call on a request's path: past `ms` the request answers 504
 * store_timeout (Retry-After from the error table) naming the running stage in
 * x-gw-stage-durations. The call itself is not cancelled: a write must give
 * the store the same deadline (DocStore WriteOptions), so that it does not
 * land after the 504. A store_timeout
 * the store itself raises names the stage the same way.
 */
export function withinStoreBound<T>(call: Promise<T>, ms: number, stages: StageClock, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(new GatewayError('store_timeout', `${what}: the store did not answer within ${ms / 1000} s`, { headers: [['x-gw-stage-durations', stages.header()]] }));
    }, ms);
  });
  const named = call.catch((err: unknown) => {
    if (err instanceof GatewayError && err.type === 'store_timeout' && !err.options.headers) {
      throw new GatewayError('store_timeout', `${what}: ${err.message}`, { cause: err, headers: [['x-gw-stage-durations', stages.header()]] });
    }
    throw err;
  });
  return Promise.race([named, timeout]).finally(() => clearTimeout(timer));
}
