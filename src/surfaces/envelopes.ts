import type { GatewayError } from '../errors.js';
import type { ErrorRenderer, HeaderList } from '../http/types.js';
import { exceptionFrame } from '../providers/eventstream.js';

/** The error object every envelope shares: message, type, code (the HTTP status). */
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

/** google.rpc status names by HTTP status, as the generate-content SDKs read them */
const GOOGLE_STATUS: Readonly<Record<number, string>> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  402: 'FAILED_PRECONDITION',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  405: 'UNIMPLEMENTED',
  409: 'ABORTED',
  413: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  451: 'PERMISSION_DENIED',
  500: 'INTERNAL',
  501: 'UNIMPLEMENTED',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
  507: 'RESOURCE_EXHAUSTED',
};
const googleError = (err: GatewayError) => ({ error: { ...errorObject(err), status: GOOGLE_STATUS[err.status] ?? (err.status < 500 ? 'FAILED_PRECONDITION' : 'INTERNAL') } });

/**
 * Google's `{error:{code,message,status}}` (gateway_timeout is DEADLINE_EXCEEDED,
 * overloaded UNAVAILABLE) plus the shared `type`; mid-stream, one SSE event carrying it.
 */
export const generateContentEnvelope: ErrorRenderer = {
  renderError: (err) => json(err, googleError(err)),
  renderStreamError: (err) => `data: ${JSON.stringify(googleError(err))}\r\n\r\n`,
};

/** AWS error names by HTTP status, as the Bedrock SDK reads them from x-amzn-errortype */
const AWS_ERROR: Readonly<Record<number, string>> = {
  400: 'ValidationException',
  401: 'UnrecognizedClientException',
  402: 'AccessDeniedException',
  403: 'AccessDeniedException',
  404: 'ResourceNotFoundException',
  409: 'ConflictException',
  429: 'ThrottlingException',
  451: 'AccessDeniedException',
  503: 'ServiceUnavailableException',
  504: 'ModelTimeoutException',
};
const awsErrorName = (err: GatewayError): string => AWS_ERROR[err.status] ?? (err.status < 500 ? 'ValidationException' : 'InternalServerException');

/**
 * The exception members ConverseStream's output union models, so the SDK
 * raises a typed exception; a stream timeout has no member of its own
 * (ModelTimeoutException is not one) and travels as modelStreamErrorException
 * with `type: gateway_timeout` in its payload.
 */
const CONVERSE_STREAM_EXCEPTION: Readonly<Record<number, string>> = {
  400: 'validationException',
  429: 'throttlingException',
  503: 'serviceUnavailableException',
  504: 'modelStreamErrorException',
};

/** The AWS SDK reads `message` at the top; the shared `error` object sits beside it. */
const awsError = (err: GatewayError) => ({ message: err.message, error: errorObject(err) });

/**
 * The AWS restJson error: `x-amzn-errortype` names it (gateway_timeout is
 * ModelTimeoutException, overloaded ServiceUnavailableException) and the body
 * is `{message, error:{message, type, code}}`. Mid-stream, one event-stream
 * exception frame of a member ConverseStream models, with the same payload.
 */
export const converseEnvelope: ErrorRenderer = {
  renderError: (err) => json(err, awsError(err), [['x-amzn-errortype', awsErrorName(err)]]),
  renderStreamError: (err) => exceptionFrame(CONVERSE_STREAM_EXCEPTION[err.status] ?? 'internalServerException', JSON.stringify(awsError(err))),
};

/** The messages surfaces' own names for the overload and timeout envelopes, as the Messages SDK knows them. */
const MESSAGES_TYPES: Partial<Record<GatewayError['type'], string>> = { overloaded: 'overloaded_error', gateway_timeout: 'api_error' };

/**
 * Messages API shape `{type:"error", error:{type, message, code}}`; mid-stream,
 * the vendor's own `event: error` carrying the gateway's type.
 */
export const messagesEnvelope: ErrorRenderer = {
  renderError: (err) => json(err, { type: 'error', error: errorObject(err, MESSAGES_TYPES[err.type] ?? err.type) }),
  renderStreamError: (err) => `event: error\ndata: ${JSON.stringify({ type: 'error', error: errorObject(err) })}\n\n`,
};

/**
 * Responses API: the shared envelope before the status line; mid-stream, the
 * API's own `error` event (`{type:"error", code, message, param}`) with the
 * gateway's type as its code.
 */
export const responsesEnvelope: ErrorRenderer = {
  renderError: sharedEnvelope.renderError,
  renderStreamError: (err) => `event: error\ndata: ${JSON.stringify({ type: 'error', code: err.type, message: err.message, param: null })}\n\n`,
};
