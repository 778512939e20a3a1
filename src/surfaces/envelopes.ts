import type { GatewayError } from '../errors.js';
import type { ErrorRenderer, HeaderList } from '../http/types.js';

/** The error object every envelope shares: message, type, code (SPEC Errors). */
const errorObject = (err: GatewayError, type: string = err.type): Record<string, unknown> => ({
  message: err.message,
  type,
  code: err.status,
  ...err.options.fields,
});

const json = (err: GatewayError, body: unknown, headers: HeaderList = []) => ({
  status: err.status,
  headers,
  body: JSON.stringify(err.options.body ?? body),
});

/** `{error:{message,type,code}}`; mid-stream, one SSE `data:` event carrying it. */
export const sharedEnvelope: ErrorRenderer = {
  renderError: (err) => json(err, { error: errorObject(err) }),
  renderStreamError: (err) => `data: ${JSON.stringify({ error: errorObject(err) })}\n\n`,
};
