import type { GatewayRequest, HeaderList } from '../http/types.js';
import { CONTINUE, type SkillInput, type SkillsStage, type Verdict } from '../pipeline/types.js';
import type { KeySkillConfig } from '../tenancy/skills.js';
import { skillHeaders, type SkillEngine, type SkillReport, type SkillsRun, type SkillsVerdict } from './engine.js';
import { parseSkillOverrides, refuseLocked, type SkillOverrides } from './overrides.js';

/**
 * The request skeleton's skills stage over the skill engine. Skills run on
 * every surface that parses a body, on the caller's bytes in that surface's
 * shape (a translation to another vendor's format is the plan's and comes
 * after); never on the parity relay (its levers are off) nor on count_tokens,
 * where `x-gw-skills` is ignored too. On a surface that runs skills,
 * `x-gw-skills` is validated first: a malformed pair is 400 request_error, an
 * override of a locked skill 403 skill_locked, and nothing goes upstream.
 */

/** Where a key's locks are read (KeySkills, from the in-process mirror). */
export interface SkillConfigSource {
  config(keyId: string): KeySkillConfig;
}

/** The cloudx routes that carry a chat body; its other Azure paths (embeddings, audio) are relayed as they are. */
const CLOUDX_CHAT = /\/chat\/completions$/;

/** Surfaces whose bodies the skills read, each by its own shape; cloudx only on its chat routes. */
const RUNS_ON: Readonly<Record<string, (req: GatewayRequest) => boolean>> = {
  execute: () => true,
  chat_completions: () => true,
  responses: () => true,
  messages: () => true,
  generate_content: () => true,
  converse: () => true,
  cloudx: (req) => CLOUDX_CHAT.test(req.path),
};

/** `x-gw-session`; on /v1/execute the route's reading of `metadata.session_id` wins. */
const SESSION = 'x-gw-session';

export class EngineSkillsStage implements SkillsStage {
  constructor(
    private readonly engine: SkillEngine,
    private readonly configs: SkillConfigSource,
  ) {}

  run(input: SkillInput): Verdict | Promise<Verdict> {
    const { req, surface, call } = input;
    if (surface.leversOff || RUNS_ON[surface.id]?.(req) !== true) return CONTINUE;
    // a route that read the request's skill choices itself (the native envelope) has validated them and checked the locks
    const chosen = input.skillChoices;
    const overrides: SkillOverrides = chosen ? (chosen.overrides as SkillOverrides) : parseSkillOverrides(req.headers['x-gw-skills']);
    if (!chosen && Object.keys(overrides).length > 0) refuseLocked(overrides, this.configs.config(call.key.key_id));
    const sessionId = chosen?.sessionId ?? req.headers[SESSION];
    req.stages.begin('skills');
    return this.engine
      .run({ surface: surface.id, body: req.body, keyId: call.key.key_id, overrides, requestId: req.id, ...(sessionId !== undefined && { sessionId }) })
      .then((run) => {
        req.stages.end();
        return this.decide(input, run);
      });
  }

  private decide(input: SkillInput, run: SkillsRun): Verdict {
    record(input, run.skills);
    // the stages beside dispatch report when they settle: in the headers only while the status line is unwritten
    input.skills.settled = run.beside.then((reports) => record(input, reports));
    return verdictOf(input, run.verdict);
  }
}

function record(input: SkillInput, reports: readonly SkillReport[]): void {
  if (reports.length === 0) return;
  input.skills.list.push(...reports);
  if (!input.res.started) input.res.extraHeaders.push(...skillHeaders(reports));
}

const SERVED_BY_CACHE: HeaderList = [['x-gw-served-by', 'cache']];

function verdictOf(input: SkillInput, v: SkillsVerdict): Verdict {
  switch (v.kind) {
    case 'refuse':
    case 'bypass':
      return v;
    case 'answer':
      return { kind: 'answer', status: v.answer.status, headers: [['content-type', v.answer.contentType], ...SERVED_BY_CACHE], body: Buffer.from(v.answer.body) };
    case 'continue':
      if (v.body === undefined && v.model === undefined) return CONTINUE;
      // the skills read the caller's bytes; a route that sends other bytes (a translation) cannot take their body as it is
      if (v.body !== undefined && input.call.body !== input.req.body) return { kind: 'bypass', reason: 'skills: a skill changed the body of a translated call, which is not supported: relayed as sent' };
      return { kind: 'rewrite', ...(v.body !== undefined && { body: v.body }), ...(v.model !== undefined && { model: v.model }) };
  }
}
