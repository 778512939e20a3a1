import { GatewayError } from '../errors.js';
import type { GatewayRequest, HeaderList, ResponseSink, Route } from '../http/types.js';
import { parseJsonObject } from '../http/validate.js';
import type { Caller, Presented } from '../pipeline/auth.js';
import type { Pipeline, RelayPlan } from '../pipeline/index.js';
import { lookupModel } from '../providers/catalog.js';
import type { ProviderId } from '../providers/types.js';
import { effectiveModes, parseSkillOverrides, refuseLocked, storedModes } from '../skills/overrides.js';
import { PER_KEY_SKILLS, type KeySkills, type SkillId, type StoredMode } from '../tenancy/skills.js';
import { chatBodyOf, envelopeField, executionReply, type ExecutionContext } from '../translate/execute.js';
import { chatTranslator } from '../translate/index.js';
import { asApiKey } from './chat-completions.js';
import { parseExecuteRequest, type ExecuteRequest } from './execute-schema.js';
import { SURFACES } from './index.js';

const surface = SURFACES.execute;

/** The providers /v1/execute reaches: OpenAI speaks chat completions, the others through a chat translator. */
const servable = (provider: ProviderId): boolean => provider === 'openai' || chatTranslator(provider) !== undefined;

/**
 * One trace entry per per-key skill and one for guardrails. No skill stage
 * runs on this gateway yet, so each reports its effective mode and that it
 * was skipped; a skill that is not off says why in `detail`.
 */
function pendingSkillTrace(modes: Readonly<Record<SkillId, StoredMode>>): Array<Record<string, unknown>> {
  const notRun = (what: string) => ({ reason: `not evaluated: ${what} not running on this gateway yet` });
  return [
    ...PER_KEY_SKILLS.map((skill) => ({ skill, mode: modes[skill], arm: null, outcome: 'skipped', ms: 0, detail: modes[skill] === 'off' ? null : notRun('the skill stages are') })),
    { skill: 'guardrails', mode: 'on', arm: null, outcome: 'skipped', ms: 0, detail: notRun('the guardrail stages are') },
  ];
}

/** Vendor answers a fallback is tried after: rate limited, or failed on its side. */
const retryableStatus = (status: number): boolean => status === 429 || status >= 500;
/** The gateway's summaries of a failed upstream (connect failure, no answer): no x-gw-error, a 5xx. */
const retryableError = (err: unknown): boolean => err instanceof GatewayError && err.status >= 500 && !err.spec.header;

/**
 * The caller's sink, seen by one attempt of a fallback chain. While a later
 * candidate remains, a vendor 429/5xx or a connect failure is held back
 * instead of written (`failed` tells the route to try the next); once the
 * status line is out, everything passes through. It also carries the
 * request's own `timeout_ms`, which gives up on it before its answer starts.
 */
class AttemptSink implements ResponseSink {
  /** another candidate follows this attempt */
  retryable = false;
  /** this attempt's failure was held back */
  failed = false;
  /** how the answer was served, from the pipeline's x-gw-served-by */
  servedBy = 'pipeline';
  private timedOut = false;
  private readonly aborts: Array<() => void> = [];

  constructor(private readonly res: ResponseSink) {}

  get aborted(): boolean {
    return this.res.aborted || this.timedOut;
  }
  get started(): boolean {
    return this.res.started;
  }
  get extraHeaders(): HeaderList {
    return this.res.extraHeaders;
  }
  get meta() {
    return this.res.meta;
  }

  send(status: number, headers: HeaderList, body: Uint8Array | string): void {
    if (this.retryable && retryableStatus(status)) {
      this.failed = true;
      return;
    }
    this.res.send(status, headers, this.served(headers) || status >= 300 ? body : withServedBy(body, this.servedBy));
  }

  start(status: number, headers: HeaderList): void {
    this.served(headers);
    this.res.start(status, headers);
  }

  write(chunk: Uint8Array | string): boolean {
    return this.res.write(chunk);
  }
  onDrain(cb: () => void): void {
    this.res.onDrain(cb);
  }
  end(chunk?: Uint8Array | string): void {
    this.res.end(chunk);
  }

  fail(err: unknown, extraHeaders?: HeaderList): void {
    if (this.retryable && !this.res.started && retryableError(err)) {
      this.failed = true;
      return;
    }
    this.res.fail(err, extraHeaders);
  }

  onAbort(cb: () => void): void {
    this.aborts.push(cb);
    this.res.onAbort(cb);
  }

  /** the request's timeout_ms passed before its answer began: 504, and the call in flight is abandoned */
  timeOut(ms: number): void {
    if (this.res.started || this.res.aborted) return;
    this.timedOut = true;
    this.res.fail(new GatewayError('gateway_timeout', `execution.timeout_ms: no answer began within ${ms} ms`));
    for (const cb of this.aborts.splice(0)) cb();
  }

  /** records x-gw-served-by; true when it is the pipeline (what the reply's trace already says) */
  private served(headers: HeaderList): boolean {
    this.servedBy = headers.find(([k]) => k === 'x-gw-served-by')?.[1] ?? this.servedBy;
    return this.servedBy === 'pipeline';
  }
}

/** A whole execution object whose trace must name a served_by other than the pipeline (a direct passthrough). */
function withServedBy(body: Uint8Array | string, servedBy: string): string {
  const reply = JSON.parse(typeof body === 'string' ? body : Buffer.from(body).toString('utf8')) as { trace?: Record<string, unknown> };
  if (reply.trace) reply.trace['served_by'] = servedBy;
  return JSON.stringify(reply);
}

/** The provider of one candidate model: the catalog's, or for a name it does not know the caller's `target.provider`, else openai. */
function providerOf(model: string, asked: ProviderId | undefined, field: string): ProviderId {
  const entry = lookupModel(model);
  if (entry && asked !== undefined && asked !== entry.provider) throw new GatewayError('request_error', `target.provider: ${model} is served by ${entry.provider}, not ${asked}`, { fields: { field: 'target.provider' } });
  const provider = entry?.provider ?? asked ?? 'openai';
  if (!servable(provider)) throw new GatewayError('request_error', `${field}: /v1/execute does not serve provider ${provider} yet`, { fields: { field } });
  return provider;
}

/** A translator's 400 names a chat-completions field: it is renamed to where it sits in the execute envelope. */
function inEnvelope<T>(translate: () => T): T {
  try {
    return translate();
  } catch (err) {
    if (!(err instanceof GatewayError) || err.type !== 'request_error') throw err;
    const field = err.options.fields?.['field'];
    if (typeof field !== 'string') throw err;
    const renamed = envelopeField(field);
    throw new GatewayError('request_error', err.message.replace(field, renamed), { fields: { ...err.options.fields, field: renamed } });
  }
}

interface Call {
  req: GatewayRequest;
  body: ExecuteRequest;
  caller: Caller;
  presented: Presented;
  sink: AttemptSink;
  skills: Array<Record<string, unknown>>;
}

/** The relay plan of one candidate: the execute body as chat completions, translated when the vendor speaks another format. */
function planFor(call: Call, model: string, attempt: number): RelayPlan {
  const { req, body, caller, presented, sink } = call;
  const field = attempt === 0 ? 'target.model' : `target.fallbacks.${attempt - 1}`;
  const provider = providerOf(model, attempt === 0 ? body.target?.provider : undefined, field);
  const created = Math.floor(Date.now() / 1000);
  const ctx: ExecutionContext = {
    id: req.id,
    created,
    model,
    provider,
    trace: () => ({ served_by: sink.servedBy, stages: req.stages.durations(), route: { model, reason: attempt === 0 ? 'requested' : `fallback ${attempt}` }, skills: call.skills }),
  };
  const chat = chatBodyOf(body, model);
  const translate = chatTranslator(provider);
  if (!translate) return { surface, caller, presented, provider, model, path: '/v1/chat/completions', body: Buffer.from(JSON.stringify(chat)), reply: executionReply(ctx, undefined) };
  const translated = inEnvelope(() => translate(chat, { model, created, fallbackId: `chatcmpl-${req.id}`, includeUsage: true, reasoning: true }, req.headers, lookupModel(model)));
  return { surface, caller, presented: asApiKey(presented), model, ...translated, reply: executionReply(ctx, translated.reply) };
}

/**
 * POST /v1/execute: the native envelope, validated (400 `{detail:{error,
 * field}}`), its skill overrides checked (400, or 403 skill_locked), then
 * relayed as chat completions to the model's vendor (translated for the ones
 * that speak another format). `target.fallbacks` are tried in order while
 * nothing has reached the caller. The reply is the execution object, or its
 * typed SSE events.
 */
export function executeRoutes(pipeline: Pipeline, keySkills: KeySkills): Route[] {
  return [
    {
      method: 'POST',
      path: '/v1/execute',
      surface,
      async handler(req, res) {
        const { caller, presented } = pipeline.authenticate(req, surface);
        const body = parseExecuteRequest(parseJsonObject(req.body));
        const overrides = parseSkillOverrides(req.headers['x-gw-skills'], { value: body.skill_overrides, field: 'skill_overrides' });
        const keyId = caller.key.key_id;
        refuseLocked(overrides, keySkills.config(keyId));
        const modes = effectiveModes(
          storedModes((s) => keySkills.effectiveMode(keyId, s)),
          overrides,
        );
        const model = body.target?.model;
        if (model === undefined) throw new GatewayError('onboarding_incomplete', 'target.model: no model given, and no model router is configured');
        const sink = new AttemptSink(res);
        const call: Call = { req, body, caller, presented, sink, skills: pendingSkillTrace(modes) };
        // every candidate is planned before any is sent: a 400 leaves nothing upstream
        const plans = [model, ...(body.target?.fallbacks ?? [])].map((m, i) => planFor(call, m, i));
        const timeoutMs = body.execution?.timeout_ms;
        const timer = timeoutMs === undefined ? undefined : setTimeout(() => sink.timeOut(timeoutMs), timeoutMs);
        try {
          for (const [i, plan] of plans.entries()) {
            sink.retryable = i < plans.length - 1;
            sink.failed = false;
            await pipeline.relay(req, sink, plan);
            if (!sink.failed || sink.aborted) return;
            req.log.info({ model: plan.model, next: plans[i + 1]?.model }, 'execute: trying the next fallback');
          }
        } finally {
          clearTimeout(timer);
        }
      },
    },
  ];
}
