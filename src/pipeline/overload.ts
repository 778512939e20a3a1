import type { LoadMonitor } from '../telemetry/load-monitor.js';
import { ADMITTED, type PolicyStage } from './types.js';

/**
 * Engine-entry shedding (SPEC overloaded rule 1b), first in the admission
 * list: a request that waited longer than GW_QUEUE_WAIT_MAX_S since the
 * transport accepted it is answered 503 `overloaded` instead of being served
 * to a client that has probably given up; nothing has been spent on it yet.
 */
export function queueWaitStage(maxWaitMs: number, monitor: LoadMonitor): PolicyStage {
  return {
    name: 'queue_wait',
    admit(call) {
      const waited = performance.now() - call.acceptedAt;
      if (waited > maxWaitMs) throw monitor.shed('queue_wait', `the request waited ${Math.round(waited)} ms before the gateway could start on it (most: ${maxWaitMs} ms)`);
      return ADMITTED;
    },
  };
}
