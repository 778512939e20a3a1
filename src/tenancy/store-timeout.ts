import { GatewayError } from '../errors.js';
import type { StageClock } from '../http/stages.js';

/**
 * Bounds a store call on a request's path: past `ms` the request answers 504
 * store_timeout (Retry-After from the error table) naming the running stage in
 * x-gw-stage-durations. The call itself is not cancelled; a late write may
 * still land, so callers document their writes as safe to repeat.
 */
export function withinStoreBound<T>(call: Promise<T>, ms: number, stages: StageClock, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(new GatewayError('store_timeout', `${what}: the store did not answer within ${ms / 1000} s`, { headers: [['x-gw-stage-durations', stages.header()]] }));
    }, ms);
  });
  return Promise.race([call, timeout]).finally(() => clearTimeout(timer));
}
