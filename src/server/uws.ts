import { createRequire } from 'node:module';
import type * as UWS from 'uWebSockets.js';
import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';

export type Uws = typeof UWS;

/** Loads a module by id; `require` in production, a stand-in in tests. */
export type ModuleLoader = (id: string) => unknown;

/** Where the package keeps the native binary for this platform and Node ABI. */
export const NATIVE_BINARY = `uWebSockets.js/binaries/uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;

/**
 * Stops uWS from writing its `uWebSockets: 20` header on every answer (it
 * tells a scanner the server and its version). The binary has no documented
 * switch: the C++ library drops the header when built with
 * UWS_HTTPRESPONSE_NO_WRITEMARK, and the Node addon exposes the same
 * event-loop flag through its undocumented `_cfg('silent')`, for this thread's
 * loop, every app on it included.
 */
function silence(uws: Uws): void {
  (uws as Uws & { _cfg(key: string): void })._cfg('silent');
}

/**
 * Loads the native uWebSockets.js binary. The package silently falls back to a
 * slow pure-JS server when its binary does not load; we refuse that unless the
 * operator explicitly allows it, and say why the binary failed.
 */
export function loadUws(allowFallback: boolean, load: ModuleLoader = createRequire(import.meta.url)): { uws: Uws; native: boolean } {
  try {
    const uws = load(NATIVE_BINARY) as Uws;
    silence(uws);
    return { uws, native: true };
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

/** uWS's LIBUS_LISTEN_EXCLUSIVE_PORT: listen without SO_REUSEPORT, so no other process can bind the port beside us. */
const LISTEN_EXCLUSIVE_PORT = 1;
const LISTEN_DEFAULT = 0;
type ListenWithOptions = (host: string, port: number, options: number, cb: (socket: us_listen_socket | false) => void) => TemplatedApp;

/**
 * Listens on host:port, exclusively unless `share` (replicas of one gateway
 * join the port through SO_REUSEPORT, which uWS sets by default). The binary
 * takes `(host, port, options, cb)`; the package's types only list `(port, options, cb)`.
 */
export function listenOn(app: TemplatedApp, host: string, port: number, share: boolean, cb: (socket: us_listen_socket | false) => void): void {
  (app.listen as unknown as ListenWithOptions).call(app, host, port, share ? LISTEN_DEFAULT : LISTEN_EXCLUSIVE_PORT, cb);
}

/** Why a listen failed, naming the port: uWS only says it did not bind. */
export const portRefusal = (host: string, port: number): string =>
  `cannot listen on ${host}:${port}: port ${port} is held by another process (or the address is not available here)`;
