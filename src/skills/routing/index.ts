import { lookupModel } from '../../providers/catalog.js';
import type { Deadline, StageInput, StageResult } from '../stage.js';
import { stageView } from '../views/index.js';
import { isObj, type Json } from '../views/view.js';
import { requestNeeds, type RequestNeeds } from './needs.js';
import { eligible, estimatedUsd, notSimple, requiredCapabilities, type Capability } from './policy.js';

/**
 * model_routing: picks the model for a request that names none (`model:
 * "auto"` on chat-completions, no `target.model` on /v1/execute) from the
 * org's allowed, reachable models by the capabilities the request needs,
 * then price; and routes a named model down to a cheaper one of the same
 * provider when the request is simple. The policy is in ./policy.ts. The
 * result names the model (`change.model`, and the body's model field where
 * the shape carries one) and `detail.route: {model, reason}`; in shadow the
 * engine keeps the detail (what it would have done) and drops the change.
 */

/** where the body names its model, by surface (generate-content and converse name it in the URL) */
const BODY_MODEL: Readonly<Record<string, (root: Json) => Json | undefined>> = {
  chat_completions: (r) => r,
  cloudx: (r) => r,
  responses: (r) => r,
  messages: (r) => r,
  execute: (r) => (isObj(r['target']) ? r['target'] : undefined),
};

/** the surfaces where a request may leave the model to the router, and how it says so */
const NAMES_NONE: Readonly<Record<string, (model: string | undefined) => boolean>> = {
  chat_completions: (m) => m === 'auto',
  execute: (m) => m === undefined,
};

const skipped = (reason: string, extra: Record<string, unknown> = {}): StageResult => ({ outcome: 'skipped', detail: { reason, ...extra } });

/** the body naming `model`, from a parse of its own (the input's parse is shared, read-only) */
function withModel(input: StageInput, model: string): Uint8Array | undefined {
  const { surface } = input;
  if (BODY_MODEL[surface] === undefined) return undefined;
  const root = JSON.parse(input.text()) as Json;
  if (surface === 'execute') root['target'] = { ...(isObj(root['target']) ? root['target'] : {}), model };
  else root['model'] = model;
  return Buffer.from(JSON.stringify(root));
}

const needList = (caps: readonly Capability[], needs: RequestNeeds) => `${caps.join('+')}, ~${needs.promptTokens} prompt tokens`;

export function evaluateModelRouting(input: StageInput, deadline: Deadline): StageResult {
  const viewed = stageView(input);
  if ('reason' in viewed) return skipped(viewed.reason);
  const root = input.json() as Json;
  const holder = BODY_MODEL[input.surface]?.(root);
  const raw = holder?.['model'];
  const named = typeof raw === 'string' ? raw : input.context?.model;
  const needs = requestNeeds(input, viewed.view);
  if (deadline.expired()) return { outcome: 'ceiling_exceeded', detail: { reason: 'deadline passed while reading the request' } };
  const caps = requiredCapabilities(needs, input.surface);
  const detail = { prompt_tokens: needs.promptTokens, needs: caps };
  const route = (model: string, reason: string, extra: Record<string, unknown> = {}): StageResult => {
    const body = withModel(input, model);
    return { outcome: 'applied', detail: { ...detail, ...extra, route: { model, reason } }, change: body === undefined ? { model } : { model, body } };
  };

  if (NAMES_NONE[input.surface]?.(named) === true) {
    // a native request that pins a provider keeps it
    const pinned = input.surface === 'execute' && typeof holder?.['provider'] === 'string' ? holder['provider'] : undefined;
    const pick = eligible(needs, caps, input.context, pinned)[0];
    if (pick === undefined) return skipped(`no allowed, reachable model has ${needList(caps, needs)}`, detail);
    return route(pick.id, `no model named: cheapest allowed model with ${needList(caps, needs)}`);
  }
  if (named === undefined) return skipped('the request names no model and this surface has no automatic choice', detail);
  const from = lookupModel(named);
  if (from === undefined) return skipped('the named model is not in the catalog', detail);
  const complex = notSimple(needs);
  if (complex !== undefined) return skipped(`not simple: ${complex}`, detail);
  const to = eligible(needs, caps, input.context, from.provider)[0];
  if (to === undefined || to.id === from.id || estimatedUsd(to, needs) >= estimatedUsd(from, needs)) return skipped(`simple, and no cheaper ${from.provider} model is allowed`, detail);
  return route(to.id, `simple request (${needList(caps, needs)}): ${from.id} routed down to the cheapest ${from.provider} model`, {
    from: from.id,
    usd_saved: estimatedUsd(from, needs) - estimatedUsd(to, needs),
  });
}
