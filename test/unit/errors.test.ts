import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { asGatewayError, ERROR_TABLE, GatewayError, type ErrorType } from '../../src/errors.js';
import { converseEnvelope, sharedEnvelope } from '../../src/surfaces/envelopes.js';

describe('the error table', () => {
  it('has the documented status for each type', () => {
    const spec: Partial<Record<ErrorType, number>> = {
      invalid_developer_key: 401,
      onboarding_incomplete: 402,
      model_not_in_scope: 403,
      invalid_admin_key: 403,
      rate_limited: 429,
      budget_exhausted: 402,
      guardrail_violation: 400,
      adapter_unavailable: 507,
      overloaded: 503,
      upstream_truncated: 502,
      store_timeout: 504,
      gateway_timeout: 504,
      request_error: 400,
      skill_locked: 403,
      forbidden: 403,
      internal_error: 500,
      idp_authentication_error: 401,
      idp_forbidden_error: 403,
    };
    for (const [type, status] of Object.entries(spec)) assert.equal(ERROR_TABLE[type as ErrorType].status, status, type);
  });

  it('x-gw-error on every gateway error but the engine-raised upstream summaries', () => {
    const without = Object.entries(ERROR_TABLE).filter(([, s]) => !s.header).map(([t]) => t).sort();
    assert.deepEqual(without, ['upstream_timeout', 'upstream_unavailable']);
    for (const t of without) assert.ok(ERROR_TABLE[t as ErrorType].status >= 500);
    // these four 5xx are the gateway's own verdicts, not summaries of an upstream failure, so they carry it
    for (const t of ['overloaded', 'store_timeout', 'upstream_truncated', 'gateway_timeout'] as const) assert.equal(ERROR_TABLE[t].header, true, t);
  });

  it('store_timeout carries Retry-After 5; an error can set its own', () => {
    assert.equal(new GatewayError('store_timeout', 'x').retryAfterS, 5);
    assert.equal(new GatewayError('gateway_timeout', 'x').retryAfterS, undefined);
    assert.equal(new GatewayError('overloaded', 'x', { retryAfterS: 3 }).retryAfterS, 3);
  });

  it('a route-specific status overrides the table; the type stays', () => {
    const e = new GatewayError('forbidden', 'geo-fence', { status: 451 });
    assert.equal(e.status, 451);
    assert.equal(e.type, 'forbidden');
    assert.equal(e.spec.header, true);
  });

  it('plain errors become internal_error, keeping the cause and hiding its message', () => {
    const cause = new Error('secret detail');
    const e = asGatewayError(cause);
    assert.equal(e.type, 'internal_error');
    assert.equal(e.status, 500);
    assert.equal(e.cause, cause);
    assert.equal(e.message.includes('secret detail'), false);
    const same = new GatewayError('not_found', 'x');
    assert.equal(asGatewayError(same), same);
  });

  it('the shared envelope is {error:{message,type,code}} plus fields; mid-stream one data event', () => {
    const e = new GatewayError('guardrail_violation', 'blocked', { fields: { detected: 'instruction_override' } });
    const r = sharedEnvelope.renderError(e);
    assert.equal(r.status, 400);
    assert.deepEqual(JSON.parse(r.body), { error: { message: 'blocked', type: 'guardrail_violation', code: 400, detected: 'instruction_override' } });
    const ev = String(sharedEnvelope.renderStreamError(new GatewayError('gateway_timeout', 'idle')));
    assert.match(ev, /^data: \{.*\}\n\n$/);
    assert.equal(JSON.parse(ev.slice(6)).error.type, 'gateway_timeout');
  });

  it('converse errors: x-amzn-errortype for the SDK, a top-level message and the shared error object', () => {
    for (const [type, aws] of [
      ['overloaded', 'ServiceUnavailableException'],
      ['gateway_timeout', 'ModelTimeoutException'],
      ['rate_limited', 'ThrottlingException'],
    ] as const) {
      const r = converseEnvelope.renderError(new GatewayError(type, 'why'));
      assert.deepEqual(r.headers, [['x-amzn-errortype', aws]]);
      assert.deepEqual(JSON.parse(r.body), { message: 'why', error: { message: 'why', type, code: ERROR_TABLE[type].status } });
    }
  });
});
