import type { GatewayRequest, HeaderList } from '../http/types.js';
import { CONTINUE, type SkillInput, type SkillsStage, type Verdict } from '../pipeline/types.js';
import type { KeySkillConfig } from '../tenancy/skills.js';
import { skillHeaders, type SkillEngine, type SkillReport, type SkillsRun, type SkillsVerdict, type StageHalf } from './engine.js';
import type { StageAnswer, StageContext } from './stage.js';
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

/** Surfaces whose reply carries every stage's report (the native envelope's trace). */
const REPLY_REPORTS_SKILLS: ReadonlySet<string> = new Set(['execute']);

/** `x-gw-session`; on /v1/execute the route's reading of `metadata.session_id` wins. */
const SESSION = 'x-gw-session';

/** What the stage hands the engine besides the body: the requests' StageContext and the stages' main-thread halves. */
export interface StageSupport {
  /** the StageContext of a request (built only when a stage that reads it runs) */
  context?: (input: SkillInput) => StageContext;
  /** the main-thread half of one stage on a request, when the stage has one */
  half?: (input: SkillInput, stage: string, acting: boolean) => StageHalf | undefined;
}

export class EngineSkillsStage implements SkillsStage {
  constructor(
    private readonly engine: SkillEngine,
    private readonly configs: SkillConfigSource,
    private readonly support: StageSupport = {},
  ) {}

  run(input: SkillInput): Verdict | Promise<Verdict> {
    const { req, surface, call } = input;
    if (surface.leversOff || RUNS_ON[surface.id]?.(req) !== true) return CONTINUE;
    // a route that read the request's skill choices itself (the native envelope) has validated them and checked the locks
    const chosen = input.skillChoices;
    const overrides: SkillOverrides = chosen ? (chosen.overrides as SkillOverrides) : parseSkillOverrides(req.headers['x-gw-skills']);
    if (!chosen && Object.keys(overrides).length > 0) refuseLocked(overrides, this.configs.config(call.key.key_id));
    req.stages.begin('skills');
    if (this.engine.idle) {
      // an empty skills table: no engine request, no promise to wait on (the stage is still timed in the header)
      req.stages.end();
      return CONTINUE;
    }
    const sessionId = input.dimensions?.session_id ?? req.headers[SESSION];
    const { context, half } = this.support;
    return this.engine
      .run({
        surface: surface.id,
        body: req.body,
        keyId: call.key.key_id,
        overrides,
        requestId: req.id,
        ...(sessionId !== undefined && { sessionId }),
        ...(REPLY_REPORTS_SKILLS.has(surface.id) && { shadowInReply: true }),
        ...(context && { context: () => context(input) }),
        ...(half && { half: (stage: string, acting: boolean) => half(input, stage, acting) }),
      })
      .then((run) => {
        req.stages.end();
        return this.decide(input, run);
      });
  }

  private decide(input: SkillInput, run: SkillsRun): Verdict {
    record(input, run.skills);
    if (run.taps.length > 0) input.replyTaps = run.taps;
    // the stages beside dispatch report when they settle: in the headers only while the status line is unwritten
    void run.beside.then((reports) => record(input, reports));
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
      return answerOf(v.answer);
    case 'continue':
      if (v.body === undefined && v.model === undefined) return CONTINUE;
      if (v.model !== undefined && !input.res.started) input.res.extraHeaders.push(['x-gw-routed-model', v.model]);
      // the change is in the caller's own shape: the pipeline plans the call again from it (a translation, a model in the path, another provider)
      return { kind: 'rewrite', ...(v.body !== undefined && { body: v.body }), ...(v.model !== undefined && { model: v.model }) };
  }
}

function answerOf(a: StageAnswer): Verdict {
  const headers: HeaderList = [['content-type', a.contentType], ...SERVED_BY_CACHE];
  const replayed = a.replayed === true ? { replayed: true as const } : {};
  // copies: a worker's answer lives in shared memory
  if ('body' in a) return { kind: 'answer', status: a.status, headers, body: Buffer.from(a.body), ...replayed };
  return { kind: 'answer', status: a.status, headers, chunks: a.chunks.map((c) => Buffer.from(c)), ...replayed };
}
