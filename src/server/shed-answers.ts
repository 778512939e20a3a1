import type { GatewayError } from '../errors.js';
import type { ErrorRenderer } from '../http/types.js';

type Rendered = ReturnType<ErrorRenderer['renderError']>;

/**
 * A transport shed comes when the replica has least to spare, and its answer
 * differs from another's only by surface and reason: each surface's envelope
 * of each reason is rendered once and reused (Retry-After, x-gw-error and the
 * request id are headers the sink adds to every answer). An error with
 * fields or a body of its own is rendered as usual.
 */
const wrappers = new WeakMap<ErrorRenderer, ErrorRenderer>();

export function renderedOnce(base: ErrorRenderer): ErrorRenderer {
  let wrapper = wrappers.get(base);
  if (wrapper === undefined) {
    const byMessage = new Map<string, Rendered>();
    wrapper = {
      renderError(err: GatewayError): Rendered {
        if (err.options.fields !== undefined || err.options.body !== undefined) return base.renderError(err);
        let rendered = byMessage.get(err.message);
        if (rendered === undefined) {
          rendered = base.renderError(err);
          byMessage.set(err.message, rendered);
        }
        return rendered;
      },
      renderStreamError: (err) => base.renderStreamError(err),
    };
    wrappers.set(base, wrapper);
  }
  return wrapper;
}
