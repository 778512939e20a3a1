import { createRequire } from 'node:module';
import type * as UWS from 'uWebSockets.js';

export type Uws = typeof UWS;

/**
 * Loads the native uWebSockets.js binary. The package silently falls back to a
 * slow pure-JS server when its binary does not load; we refuse that unless the
 * operator explicitly allows it, and say why the binary failed.
 */
export function loadUws(allowFallback: boolean): { uws: Uws; native: boolean } {
  const require = createRequire(import.meta.url);
  const binary = `uWebSockets.js/binaries/uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  try {
    return { uws: require(binary) as Uws, native: true };
  } catch (err) {
    if (!allowFallback) {
      throw new Error(
        `uWebSockets.js native binary did not load (${binary}: ${(err as Error).message.split('\n')[0]}); ` +
          'refusing the slow JS fallback. Set GW_ALLOW_UWS_FALLBACK=1 to run on it anyway.',
        { cause: err },
      );
    }
    return { uws: require('uWebSockets.js') as Uws, native: false };
  }
}
