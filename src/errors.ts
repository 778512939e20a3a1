/**
 * THE error table. Every error the gateway originates is a GatewayError whose
 * `type` is a key here; the status, whether it carries `x-gw-error`, any
 * Retry-After and its log level come from this table only. Surfaces turn it
 * into their own envelope (surfaces/envelopes.ts); nothing else writes errors.
 */
export interface ErrorSpec {
  status: number;
  /** false for engine-raised 5xx that summarize an upstream failure: without x-gw-error, as a provider's failure */
  header: boolean;
  retryAfterS?: number;
  level: 'info' | 'warn' | 'error';
}

export const ERROR_TABLE = {
  invalid_developer_key: { status: 401, header: true, level: 'info' },
  onboarding_incomplete: { status: 402, header: true, level: 'info' },
  budget_exhausted: { status: 402, header: true, level: 'info' },
  model_not_in_scope: { status: 403, header: true, level: 'info' },
  invalid_admin_key: { status: 403, header: true, level: 'warn' },
  rate_limited: { status: 429, header: true, level: 'info' },
  guardrail_violation: { status: 400, header: true, level: 'info' },
  adapter_unavailable: { status: 507, header: true, level: 'warn' },
  overloaded: { status: 503, header: true, level: 'warn' },
  upstream_truncated: { status: 502, header: true, level: 'warn' },
  store_timeout: { status: 504, header: true, retryAfterS: 5, level: 'error' },
  gateway_timeout: { status: 504, header: true, level: 'warn' },
  request_error: { status: 400, header: true, level: 'info' },
  skill_locked: { status: 403, header: true, level: 'info' },
  forbidden: { status: 403, header: true, level: 'info' },
  internal_error: { status: 500, header: true, level: 'error' },
  idp_authentication_error: { status: 401, header: true, level: 'info' },
  idp_forbidden_error: { status: 403, header: true, level: 'info' },
  not_found: { status: 404, header: true, level: 'info' },
  method_not_allowed: { status: 405, header: true, level: 'info' },
  conflict: { status: 409, header: true, level: 'info' },
  payload_too_large: { status: 413, header: true, level: 'info' },
  not_implemented: { status: 501, header: true, level: 'info' },
  // Engine-raised summaries of an upstream failure: no x-gw-error (docs/errors.md, Rules).
  upstream_unavailable: { status: 502, header: false, level: 'warn' },
  upstream_timeout: { status: 504, header: false, level: 'warn' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorType = keyof typeof ERROR_TABLE;

export interface GatewayErrorOptions {
  /** overrides the table status where a route-specific status applies (e.g. 451 forbidden) */
  status?: number;
  /** extra fields merged into the envelope's error object (e.g. `detected`, budget figures) */
  fields?: Record<string, unknown>;
  /** a whole replacement body (native validation `detail`, converse ValidationException) */
  body?: unknown;
  headers?: Array<[string, string]>;
  retryAfterS?: number;
  /** an engine-raised summary of the upstreams' state (a dispatch-side shed: every destination full) carries no x-gw-error, whatever its type */
  summary?: true;
  cause?: unknown;
}

export class GatewayError extends Error {
  readonly type: ErrorType;
  readonly status: number;
  readonly options: GatewayErrorOptions;

  constructor(type: ErrorType, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.type = type;
    this.status = options.status ?? ERROR_TABLE[type].status;
    this.options = options;
  }

  get spec(): ErrorSpec {
    return ERROR_TABLE[this.type];
  }

  /** whether the answer carries x-gw-error: the table's rule, except on a summary of the upstreams' state */
  get carriesHeader(): boolean {
    return this.spec.header && this.options.summary !== true;
  }

  get retryAfterS(): number | undefined {
    return this.options.retryAfterS ?? this.spec.retryAfterS;
  }
}

/** Errors from libraries arrive as plain Errors; anything that is not a GatewayError is internal. */
export function asGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  return new GatewayError('internal_error', 'internal error', { cause: err });
}
