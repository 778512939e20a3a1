import { GatewayError } from '../errors.js';
import type { Presented } from '../http/credentials.js';
import type { GatewayRequest, Route } from '../http/types.js';
import { parseJsonObject } from '../http/validate.js';
import type { Pipeline } from '../pipeline/index.js';
import type { Candidate, Fallback, Plan, Planner, RequestFacts, SkillRecord } from '../pipeline/types.js';
import type { Operation } from '../providers/adapter.js';
import { lookupModel } from '../providers/catalog.js';
import type { Providers, Target } from '../providers/index.js';
import type { ProviderId } from '../providers/types.js';
import { withoutPreview } from '../skills/pii/index.js';
import { trueUpFolds } from '../skills/trajectory/true-up.js';
import { effectiveModes, parseSkillOverrides, refuseLocked, storedModes, type SkillOverrides } from '../skills/overrides.js';
import { PER_KEY_SKILLS, type KeySkills, type SkillId, type StoredMode } from '../tenancy/skills.js';
import { chatBodyOf, envelopeField, executionReply, type ExecutionContext } from '../translate/execute.js';
import { DiscardedText, JsonText } from '../translate/chat/body-writer.js';
import { chatTranslator } from '../translate/index.js';
import type { TranslatedCall } from '../translate/types.js';
import { asApiKey } from './chat-completions.js';
import { parseExecuteRequest, type ExecuteRequest } from './execute-schema.js';
import { SURFACES } from './index.js';

const surface = SURFACES.execute;

const CHAT: Operation = { op: 'chat_completions' };

/**
 * `trace.skills`: one entry per per-key skill and one for guardrails, read at
 * reply time from the request's skill reports (the engine's, in one place on
 * the exchange). A per-key skill without a report was off for this request,
 * or has no stage on this gateway: it reads `skipped` with its effective mode.
 * The guardrails entry is the regex stage's report, the classifier's in its detail.
 */
function traceSkills(modes: Readonly<Record<SkillId, StoredMode>>, reports: readonly SkillRecord[]): Array<Record<string, unknown>> {
  const reported = new Map(reports.map((r) => [r.skill, r]));
  const entry = (r: SkillRecord, mode: string) => ({ skill: r.skill, mode, arm: r.arm, outcome: r.outcome, ms: r.ms, detail: r.detail ? withoutPreview(r.detail) : null });
  const perKey = PER_KEY_SKILLS.map((skill) => {
    const r = reported.get(skill);
    return r ? entry(r, modes[skill]) : { skill, mode: modes[skill], arm: null, outcome: 'skipped', ms: 0, detail: null };
  });
  const regex = reported.get('guardrails');
  const classifier = reported.get('guardrails_model');
  const guardrails = regex
    ? { ...entry(regex, 'on'), skill: 'guardrails', detail: { ...regex.detail, ...(classifier && { classifier: { outcome: classifier.outcome, mode: classifier.mode, ...classifier.detail } }) } }
    : { skill: 'guardrails', mode: 'on', arm: null, outcome: 'skipped', ms: 0, detail: null };
  return [...perKey, guardrails];
}

/** model_routing's `{model, reason}` when it chose the model this call went to */
function routedBy(reports: readonly SkillRecord[]): Record<string, unknown> | undefined {
  const route = reports.find((r) => r.skill === 'model_routing' && r.outcome === 'applied')?.detail?.['route'];
  return typeof route === 'object' && route !== null ? (route as Record<string, unknown>) : undefined;
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

/** What every candidate of one request is planned from. */
interface ExecuteCall {
  req: GatewayRequest;
  body: ExecuteRequest;
  providers: Providers;
  presented: Presented;
  facts: RequestFacts;
  modes: Readonly<Record<SkillId, StoredMode>>;
}

/** The provider of one candidate model: the catalog's, or for a name it does not know the caller's `target.provider`, else openai. */
function providerOf(model: string, asked: ProviderId | undefined): ProviderId {
  const entry = lookupModel(model);
  if (entry && asked !== undefined && asked !== entry.provider) throw new GatewayError('request_error', `target.provider: ${model} is served by ${entry.provider}, not ${asked}`, { fields: { field: 'target.provider' } });
  return entry?.provider ?? asked ?? 'openai';
}

/** One candidate model as planned: where its call goes, and the call itself, made by `candidate()` (its body and all). */
interface Planned {
  provider: ProviderId;
  location: Candidate['location'];
  candidate(): Candidate;
}

/**
 * One candidate: the execute body as chat completions, to a vendor that
 * speaks them, or translated for one that does not (a provider that does
 * neither, or a body its translation cannot carry, is a 400 naming the
 * candidate's field, raised here). With `checkOnly` the translation is
 * written nowhere: every 400 it would raise is, and the body is made only
 * when `candidate()` is called.
 */
function planCandidate(call: ExecuteCall, model: string, attempt: number, checkOnly: boolean): Planned {
  const { req, body, providers, presented, facts, modes } = call;
  const field = attempt === 0 ? 'target.model' : `target.fallbacks.${attempt - 1}`;
  const provider = providerOf(model, attempt === 0 ? body.target?.provider : undefined);
  const created = Math.floor(Date.now() / 1000);
  const asked = { model, reason: attempt === 0 ? 'requested' : `fallback ${attempt}` };
  const ctx: ExecutionContext = {
    id: req.id,
    created,
    model,
    provider,
    trace: (usage) => ({
      served_by: facts.servedBy,
      stages: req.stages.durations(),
      route: (attempt === 0 && routedBy(facts.skills.list)) || asked,
      // a fold's ledger as accounting trues it up, once the reply's usage is known
      skills: traceSkills(modes, trueUpFolds(facts.skills.list, { usage, model, provider })),
    }),
  };
  const chat = chatBodyOf(body, model);
  const translate = chatTranslator(provider);
  if (!translate) {
    const target = providers.target(provider, CHAT, req.headers, field);
    return { provider, location: target.location, candidate: () => ({ provider, location: target.location, path: target.path, model, body: Buffer.from(JSON.stringify(chat)), reply: executionReply(ctx, undefined) }) };
  }
  const translated = (out: JsonText) => inEnvelope(() => translate(chat, { model, created, fallbackId: `chatcmpl-${req.id}`, includeUsage: true, reasoning: true }, lookupModel(model), out));
  // literals, not spreads of the target (planned.ts says why)
  const candidateOf = (t: TranslatedCall, target: Target): Candidate => ({
    provider,
    location: target.location,
    path: target.path,
    model,
    body: t.body,
    headers: t.headers,
    reply: executionReply(ctx, t.reply),
    presented: asApiKey(presented),
  });
  if (!checkOnly) {
    const t = translated(new JsonText(req.body.length));
    const target = providers.target(provider, t.operation, req.headers, field);
    return { provider, location: target.location, candidate: () => candidateOf(t, target) };
  }
  const target = providers.target(provider, translated(new DiscardedText()).operation, req.headers, field);
  return { provider, location: target.location, candidate: () => candidateOf(translated(new JsonText(req.body.length)), target) };
}

/**
 * POST /v1/execute: the native envelope, validated (400 `{detail:{error,
 * field}}`), its skill overrides checked (400, or 403 skill_locked), then
 * relayed as chat completions to the model's vendor (translated for the ones
 * that speak another format). Every candidate (`target.model`, then
 * `target.fallbacks`) is planned and checked before any is sent, so a 400
 * leaves nothing upstream; the pipeline tries them in order while nothing has
 * reached the caller, a fallback's body made when it is tried. The reply is
 * the execution object, or its typed SSE events.
 */
const plan = (keySkills: KeySkills): Planner => (req, { providers, presented, caller, facts }) => {
  const body = parseExecuteRequest(parseJsonObject(req.body));
  const overrides = parseSkillOverrides(req.headers['x-gw-skills'], { value: body.skill_overrides, field: 'skill_overrides' });
  const keyId = caller.key.key_id;
  refuseLocked(overrides, keySkills.config(keyId));
  const modes = effectiveModes(
    storedModes((s) => keySkills.effectiveMode(keyId, s)),
    overrides,
  );
  const model = body.target?.model;
  const call: ExecuteCall = { req, body, providers, presented, facts, modes };
  if (model === undefined) return unroutedPlan(call, overrides);
  const first = planCandidate(call, model, 0, false).candidate();
  // a fallback is checked now and its body made only if it is tried: the first candidate's is the only one held
  const fallbacks = (body.target?.fallbacks ?? []).map((m, i): Fallback => ({ model: m, ...planCandidate(call, m, i + 1, true) }));
  const timeoutMs = body.execution?.timeout_ms;
  return {
    provider: first.provider,
    location: first.location,
    path: first.path,
    model: first.model,
    body: first.body,
    headers: first.headers,
    reply: first.reply,
    presented: first.presented,
    fallbacks: fallbacks.length > 0 ? fallbacks : undefined,
    deadlineMs: timeoutMs,
    ...readingOf(body, overrides),
  };
};

/** The skill choices and usage dimensions the envelope names: each `metadata` field is the row's over its header, and its session draws the canary arms. */
const readingOf = (body: ExecuteRequest, overrides: SkillOverrides): Pick<Plan, 'skillChoices' | 'dimensions'> => ({ skillChoices: { overrides }, ...(body.metadata !== undefined && { dimensions: body.metadata }) });

const NO_MODEL = 'target.model: no model given, and model_routing did not choose one';

/**
 * No `target.model`: the choice is model_routing's. With the skill off for
 * this request it is 402 at once; otherwise the call is planned without a
 * model, and goes nowhere unless a routing stage names one (the skills stage
 * then plans it again with `target.model` set).
 */
function unroutedPlan(call: ExecuteCall, overrides: SkillOverrides): Plan {
  const routing = call.modes.model_routing;
  if (routing === 'off' || routing === 'rolled_back') throw new GatewayError('onboarding_incomplete', 'target.model: no model given, and model_routing is off for this key');
  const { req, body, providers } = call;
  return {
    // never sent: a placeholder until a model is chosen (target.provider, if any, keeps the choice to that provider)
    ...providers.target('openai', CHAT, req.headers, 'target.provider'),
    model: undefined,
    body: Buffer.from(JSON.stringify(chatBodyOf(body, ''))),
    ...readingOf(body, overrides),
    unrouted: new GatewayError('onboarding_incomplete', NO_MODEL),
  };
}

export const executeRoutes = (pipeline: Pipeline, keySkills: KeySkills): Route[] => pipeline.routes([{ method: 'POST', path: '/v1/execute', surface, plan: plan(keySkills) }]);
