import { createRequire } from 'node:module';
import type * as UWS from 'uWebSockets.js';
import type { TemplatedApp } from 'uWebSockets.js';

export type Uws = typeof UWS;

/** Loads a module by id; `require` in production, a stand-in in tests. */
export type ModuleLoader = (id: string) => unknown;

/** Where the package keeps the native binary for this platform and Node ABI. */
export const NATIVE_BINARY = `uWebSockets.js/binaries/uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;

/**
 * Loads the native uWebSockets.js binary. The package silently falls back to a
 * slow pure-JS server when its binary does not load; we refuse that unless the
 * operator explicitly allows it, and say why the binary failed.
 */
export function loadUws(allowFallback: boolean, load: ModuleLoader = createRequire(import.meta.url)): { uws: Uws; native: boolean } {
  try {
    return { uws: load(NATIVE_BINARY) as Uws, native: true };
  } catch (err) {
    if (!allowFallback) {
      throw new Error(
        `uWebSockets.js native binary did not load (${NATIVE_BINARY}: ${(err as Error).message.split('\n')[0]}); ` +
          'refusing the slow JS fallback. Set GW_ALLOW_UWS_FALLBACK=1 to run on it anyway.',
        { cause: err },
      );
    }
    return { uws: load('uWebSockets.js') as Uws, native: false };
  }
}

/** `TemplatedApp.close()` exists in this uWS build (it closes the listener and every socket) but its types omit it */
export const closeApp = (app: TemplatedApp): void => (app as TemplatedApp & { close(): void }).close();
