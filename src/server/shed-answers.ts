import type { GatewayError } from '../errors.js';
import type { ErrorRenderer } from '../http/types.js';

type Rendered = ReturnType<ErrorRenderer['renderError']>;

/** renderings kept per surface: shed reasons are fixed texts, so a message that varied is rendered as usual rather than grow the memo */
const KEPT_PER_SURFACE = 32;

const wrappers = new WeakMap<ErrorRenderer, ErrorRenderer>();

/**
 * A transport shed comes when the replica has least to spare, and its answer
 * differs from another's only by surface and reason: each surface's envelope
 * of each reason is rendered once and reused (Retry-After, x-gw-error and the
 * request id are headers the sink adds to every answer). An error with
 * fields or a body of its own is rendered as usual.
 */
export function renderedOnce(base: ErrorRenderer): ErrorRenderer {
  let wrapper = wrappers.get(base);
  if (wrapper === undefined) {
    const byMessage = new Map<string, Rendered>(); // by type and message
    wrapper = {
      renderError(err: GatewayError): Rendered {
        if (err.options.fields !== undefined || err.options.body !== undefined) return base.renderError(err);
        const key = `${err.type}\n${err.message}`;
        let rendered = byMessage.get(key);
        if (rendered === undefined) {
          rendered = base.renderError(err);
          if (byMessage.size < KEPT_PER_SURFACE) byMessage.set(key, rendered);
        }
        return rendered;
      },
      renderStreamError: (err) => base.renderStreamError(err),
    };
    wrappers.set(base, wrapper);
  }
  return wrapper;
}
