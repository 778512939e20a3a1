/**
 * Prints docs/errors.md's generated blocks from the error table
 * (src/errors.ts) and the surfaces' envelopes (src/surfaces/), so the
 * catalogue cannot drift from the code:
 *
 *   node --import tsx scripts/error-catalogue.ts           prints both blocks
 *   node --import tsx scripts/error-catalogue.ts --write   rewrites them in docs/errors.md
 *
 * test/unit/error-catalogue.test.ts fails when docs/errors.md differs.
 */
import { fileURLToPath } from 'node:url';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { ERROR_TABLE, GatewayError, type ErrorSpec, type ErrorType } from '../src/errors.js';
import type { Surface } from '../src/http/types.js';
import { SURFACES } from '../src/surfaces/index.js';
import { row, writeBlock } from './doc-blocks.js';

export const ERRORS_DOC = fileURLToPath(new URL('../docs/errors.md', import.meta.url));
export const TABLE_BLOCK = 'error-table';
export const ENVELOPES_BLOCK = 'envelopes';

/** When the gateway raises each type, in this code. */
export const RAISED_WHEN: Readonly<Record<ErrorType, string>> = {
  invalid_developer_key: 'developer key missing, unknown, revoked or expired (also a wrong config secret on the skill routes); no anonymous fallback',
  onboarding_incomplete: 'no provider credential, pass-through or stored, for the provider the call goes to (or a stored one sealed under a key no longer configured)',
  budget_exhausted: 'the call\'s worst-case cost would breach the org\'s spend cap; `cap_usd`, `period`, `consumed_usd`, `reserved_usd`, `request_reserve_usd`, `resets_at` in the error object, headers `x-gw-budget-cap-usd`, `x-gw-budget-consumed-usd`, `x-gw-budget-resets-at`',
  model_not_in_scope: 'the model is not enabled for the org (`/api/v1/model_access/update`)',
  invalid_admin_key: 'an admin route without the deployment admin key (or `GW_ADMIN_KEY` unset)',
  rate_limited: 'the org\'s `rps_cap` is exceeded; `Retry-After` ≥ 1 s, `x-ratelimit-limit` (the cap), `x-ratelimit-remaining: 0`, `x-ratelimit-reset` (seconds)',
  guardrail_violation: 'the guardrails refused the prompt (every surface that parses a body; never the parity relay `/v1/messages` or count_tokens); `detected` in the error object lists the values: `instruction_override`, `role_reassignment`, `secret_exfiltration`, `system_prompt_probe` (the regex stage), `learned_injection` (the classifier, only with `GW_GUARDRAILS_MODEL_MODE=enforce`); nothing was sent upstream',
  adapter_unavailable: 'a call names a LoRA adapter larger than the `adapter_memory_mb` of every self-hosted destination holding its base model (it cannot fit even loaded alone); nothing is sent upstream or unloaded',
  overloaded: 'the gateway shed the request on its own capacity, with `Retry-After` of 1 to 30 s from how fast the replica completes requests: at the transport before the body is read (`GW_INGRESS_BUDGET`, or a heavy body while the event loop is stalled), at engine entry (waited past `GW_QUEUE_WAIT_MAX_S`), or at dispatch (every destination\'s upstream origin at `GW_UPSTREAM_MAX_INFLIGHT`: a summary of the upstreams\' state, without `x-gw-error`); docs/operations.md, Overload',
  upstream_truncated: 'the provider answered 2xx with a body that is not JSON (a truncated reply); never relayed as 200, not retried',
  store_timeout: 'a stored-provider-key lookup or write, or a skill configuration write, did not finish within `GW_BYOK_STORE_TIMEOUT_S` (then `x-gw-stage-durations` names the running stage); any configuration write while Redis does not answer (5 s command bound); the settings or spend-cap route could not read consumption from the metering store',
  gateway_timeout: 'no response had started `GW_REQUEST_DEADLINE_S` after the request was accepted, or on `/v1/execute` within its `execution.timeout_ms`; mid-stream: the stream idled `GW_STREAM_IDLE_S` or ran past `GW_STREAM_DEADLINE_S`',
  request_error: 'refused as sent: unparseable body, missing or malformed field (on `/v1/execute` `{detail:{error, field}}` with a dotted field path), an unknown or malformed `x-gw-skills` / `skill_overrides` pair or a per-request `canary…` / `rolled_back`, unknown model for the Responses API, converse path/body `modelId` mismatch, API key beside an access-key pair, a location outside the allowlist, ambiguous framing (then the connection closes)',
  skill_locked: 'a per-request override (`x-gw-skills` on every surface that parses a body, or `skill_overrides` on `/v1/execute`) of a skill the key has locked (`locked_skills`); `locked` lists them (on `/v1/execute` in `{detail:{error:"skill_locked", locked:[…]}}`); nothing was sent upstream',
  forbidden: 'the gateway\'s own policy: an org key naming another tenant, `skill_params` on a non-Enterprise plan, `GW_DEDICATED_TENANT` serving another org (403), a region outside `GW_ALLOWED_REGIONS` (451)',
  internal_error: 'an uncaught failure in a configuration or admin handler; on the relay surfaces a fault in the gateway\'s own stages instead relays the call to the provider (`x-gw-served-by: direct_passthrough`, `x-gw-warnings: _passthrough`)',
  idp_authentication_error: 'IdP mode: the bearer JWT is refused (signature, issuer, audience, expiry, not a JWT)',
  idp_forbidden_error: 'IdP mode: the token is valid but no group maps to an org, or it names a tenant outside its orgs',
  not_found: 'no route for the path; an unknown tenant or key on the configuration routes (also for another tenant\'s key, so a 404 confirms nothing); an unknown generate-content method',
  method_not_allowed: 'the path exists for another method; `Allow` lists them',
  conflict: 'an org exists with other fields; a key id or secret already exists',
  payload_too_large: 'the body exceeds `GW_MAX_BODY_BYTES` (the connection closes)',
  not_implemented: 'a durable telemetry read (`/api/v1/usage`, `/api/v1/tenant/requests`, `/api/v1/tenant/request/{id}`) on a deployment without Redis, where no durable rows or usage are kept',
  upstream_unavailable: 'the upstream call failed before a response (connection refused or reset, DNS); engine-raised summary, so no `x-gw-error`',
  upstream_timeout: 'the upstream sent no response headers within `GW_REQUEST_DEADLINE_S`; engine-raised summary, so no `x-gw-error`',
};

const yes = (b: boolean) => (b ? 'yes' : 'no');

/** Every type of the error table with its status, header, Retry-After and when it is raised. */
export function errorTable(): string {
  const lines = [row(['Type', 'HTTP', '`x-gw-error`', 'Retry-After', 'Raised when']), row(['---', '---', '---', '---', '---'])];
  for (const [type, spec] of Object.entries(ERROR_TABLE) as Array<[ErrorType, ErrorSpec]>) {
    const status = type === 'forbidden' ? '403 / 451' : String(spec.status);
    const retry = spec.retryAfterS !== undefined ? `${spec.retryAfterS} s` : type === 'rate_limited' ? 'computed' : '';
    lines.push(row([`\`${type}\``, status, yes(spec.header), retry, RAISED_WHEN[type]]));
  }
  return lines.join('\n');
}

/** Which routes each surface's envelope serves. */
const SURFACE_ROUTES: ReadonlyArray<[keyof typeof SURFACES, string]> = [
  ['execute', '`/v1/execute`'],
  ['chat_completions', '`/v1/chat/completions`'],
  ['responses', '`/v1/responses` and its cloudx forms'],
  ['cloudx', '`/cloudx/compat/…`'],
  ['api', 'configuration and admin routes `/api/v1/…`'],
  ['public', '`/healthz`, `/v1/models`, `/metrics`, and any unmatched path'],
  ['messages', '`/msgvendor/v1/messages`'],
  ['count_tokens', '`/msgvendor/v1/messages/count_tokens`'],
  ['parity_relay', '`/v1/messages`'],
  ['generate_content', '`/genvendor/v1beta/models/…`'],
  ['converse', '`/cloudy/…`'],
];

const codec = new EventStreamCodec(toUtf8, fromUtf8);

/** A mid-stream error as text: SSE as written, an AWS event-stream frame decoded to its headers and payload. */
function streamErrorText(surface: Surface, err: GatewayError): string {
  const out = surface.renderStreamError(err);
  if (typeof out === 'string') return out.replace(/\r/g, '').trimEnd();
  const frame = codec.decode(out);
  const headers = Object.entries(frame.headers).map(([k, v]) => `${k}: ${String(v.value)}`);
  return `[AWS event-stream frame, ${out.byteLength} bytes]\n${headers.join('\n')}\n${toUtf8(frame.body)}`;
}

/** Before the status line and mid-stream, for each surface, rendered by the code itself. */
export function envelopeExamples(): string {
  const before = new GatewayError('onboarding_incomplete', 'no msgvendor credential: send one with the request or store one with /api/v1/vendor_key/create');
  const overloaded = new GatewayError('overloaded', 'the gateway is at capacity', { retryAfterS: 2 });
  const timeout = new GatewayError('gateway_timeout', 'stream silent for 300 s');
  const parts: string[] = [];
  const seen = new Map<string, string>();
  const withHeaders = (r: { headers: Array<[string, string]>; body: string }) => `${r.headers.map(([k, v]) => `${k}: ${v}  `).join('')}${r.body}`;
  for (const [id, routes] of SURFACE_ROUTES) {
    const surface = SURFACES[id];
    const rendered = surface.renderError(before);
    const signature = `${rendered.body}|${JSON.stringify(rendered.headers)}|${streamErrorText(surface, timeout)}|${surface.renderError(overloaded).body}`;
    parts.push(`### ${routes} (surface \`${id}\`)`);
    const same = seen.get(signature);
    if (same !== undefined) {
      parts.push(`Same envelopes as surface \`${same}\`.`);
      continue;
    }
    seen.set(signature, id);
    const headers = rendered.headers.map(([k, v]) => `${k}: ${v}\n`).join('');
    parts.push(
      `Before the status line (\`onboarding_incomplete\`):\n\n\`\`\`\nHTTP/1.1 ${rendered.status}\n${headers}x-gw-error: onboarding_incomplete\n\n${rendered.body}\n\`\`\``,
      `\`overloaded\` and \`gateway_timeout\` on this surface:\n\n\`\`\`\n${withHeaders(surface.renderError(overloaded))}\n${withHeaders(surface.renderError(timeout))}\n\`\`\``,
      `Mid-stream (\`gateway_timeout\` after the status line was sent; no header can change then):\n\n\`\`\`\n${streamErrorText(surface, timeout)}\n\`\`\``,
    );
  }
  return parts.join('\n\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv.includes('--write')) {
    writeBlock(ERRORS_DOC, TABLE_BLOCK, errorTable());
    writeBlock(ERRORS_DOC, ENVELOPES_BLOCK, envelopeExamples());
  } else process.stdout.write(`${errorTable()}\n\n${envelopeExamples()}\n`);
}
