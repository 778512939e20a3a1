import type { ReplyTap, SkillInput, SkillReports } from '../../pipeline/types.js';
import { costUsd, lookupModel, pricedModel } from '../../providers/catalog.js';
import type { ProviderId } from '../../providers/types.js';
import type { CachedReply } from '../../stores/cache.js';
import type { StageHalf } from '../engine.js';
import type { StageAnswer, StageResult } from '../stage.js';
import type { CacheLookup, CacheRoute, RecordKey, SemanticCache } from './lookup.js';
import { RecordingSink } from './recording-sink.js';

/**
 * semantic_cache's main-thread half. The worker computed the request's keys
 * (StageCacheKeys); here they are looked up in the store with the org, the
 * provider and model the call goes to (after any routing) and the stream flag.
 *
 * - Acting: a hit answers the stored reply (nothing goes upstream); a miss
 *   taps the reply, which is stored once it has ended, before its last write
 *   reaches the caller (so any replica finds it once the caller has it).
 * - Shadow (beside dispatch): the call is relayed either way; the reply is
 *   tapped from the start. A would-be miss stores it as prod would; a
 *   would-be hit compares it with the stored reply (the false-hit measure:
 *   `false_hit` in the report when the lookup settled before the reply ended,
 *   and gw_cache_shadow_compared_total always).
 *
 * A store that fails or is slow is a miss with `lookup: "error"`: the call is
 * relayed with every other skill's change, never failed, and nothing is stored.
 */

/** surfaces that name a streamed reply in the path rather than the body */
const STREAM_PATH = /streamGenerateContent|converse-stream/;

const SKILL = 'semantic_cache';

function routeOf(input: SkillInput, model: string | undefined, stream: boolean): CacheRoute {
  const { call } = input;
  // a routed model may belong to another provider: the call goes where the catalog says
  const provider = model === call.model ? call.provider : (lookupModel(model)?.provider ?? call.provider);
  return { provider, model: model ?? '', stream: stream || STREAM_PATH.test(input.req.path) };
}

function answerOf(reply: CachedReply): StageAnswer {
  const { status, contentType } = reply;
  if (reply.body !== undefined) return { status, contentType, body: reply.body, replayed: true };
  return { status, contentType, chunks: reply.events ?? [], replayed: true };
}

/** The tokens and dollars the stored reply's call cost: what a hit does not spend again. */
function saved(reply: CachedReply, route: CacheRoute): Record<string, number> {
  const u = reply.usage;
  if (u === undefined) return {};
  const usage = { ...u, cached_tokens: 0 };
  return { tokens_saved: u.input_tokens + u.output_tokens, usd_saved: costUsd(pricedModel(route.model, usage), usage, route.provider as ProviderId) };
}

function lookupDetail(found: CacheLookup): Record<string, unknown> {
  if (found.kind === 'hit') return { match: found.match, similarity: found.similarity };
  if (found.kind === 'error') return { lookup: 'error', reason: found.reason };
  return found.similarity === undefined ? {} : { similarity: found.similarity };
}

export function cacheHalf(cache: SemanticCache, input: SkillInput, acting: boolean): StageHalf {
  return acting ? new ActingHalf(cache, input) : new ShadowHalf(cache, input);
}

/** Acting: a hit is the answer; a miss stores the reply. */
class ActingHalf implements StageHalf {
  tap: ReplyTap | undefined;

  constructor(
    private readonly cache: SemanticCache,
    private readonly input: SkillInput,
  ) {}

  async finish(result: StageResult | undefined, model: string | undefined): Promise<StageResult | undefined> {
    const keys = result?.cache;
    if (keys === undefined) return result;
    const route = routeOf(this.input, model, keys.stream);
    const found = await this.cache.lookup(this.input.call.org.org_id, route, keys);
    if (found.kind === 'hit') return { outcome: 'hit', detail: { ...lookupDetail(found), ...saved(found.reply, route) }, answer: answerOf(found.reply) };
    if (found.kind === 'miss') this.tap = recordTap(this.cache, found.recordKey);
    return { outcome: 'miss', detail: lookupDetail(found) };
  }
}

/** A miss's tap: the reply is stored when it has ended, its last write held until then. */
function recordTap(cache: SemanticCache, key: RecordKey): ReplyTap {
  let sink: RecordingSink | undefined;
  return {
    wrap: (inner) => (sink = new RecordingSink(inner, cache.maxEntryBytes, true)),
    ended(outcome) {
      const s = sink;
      if (s === undefined) return;
      const reply = s.reply(outcome.usage && { input_tokens: outcome.usage.input_tokens, output_tokens: outcome.usage.output_tokens });
      if (reply === undefined) return s.release();
      void cache.record(key, reply).finally(() => s.release());
    },
  };
}

/** Shadow: the reply is tapped before the lookup is done; what happens to it waits for the lookup. */
class ShadowHalf implements StageHalf {
  readonly tap: ReplyTap;
  /** the lookup, once finished (undefined: the stage did not complete or found no keys) */
  private found: CacheLookup | undefined;
  private settled = false;
  private readonly done: Promise<void>;
  private resolve!: () => void;
  private sink: RecordingSink | undefined;

  constructor(
    private readonly cache: SemanticCache,
    private readonly input: SkillInput,
  ) {
    this.done = new Promise((r) => (this.resolve = r));
    this.tap = {
      wrap: (inner) => (this.sink = new RecordingSink(inner, cache.maxEntryBytes, false)),
      ended: (outcome, reports) => this.ended(outcome.usage, reports),
    };
  }

  async finish(result: StageResult | undefined, model: string | undefined): Promise<StageResult | undefined> {
    try {
      const keys = result?.cache;
      if (keys === undefined) return result;
      this.found = await this.cache.lookup(this.input.call.org.org_id, routeOf(this.input, model, keys.stream), keys);
      return { outcome: this.found.kind === 'hit' ? 'hit' : 'miss', detail: lookupDetail(this.found) };
    } finally {
      this.settled = true;
      this.resolve();
    }
  }

  private ended(usage: { input_tokens: number; output_tokens: number } | undefined, reports: SkillReports): void {
    const live = this.sink?.reply(usage && { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens });
    if (live === undefined) return;
    // settled by now (the usual case, the lookup being faster than the vendor): the row gets the comparison
    if (this.settled) this.judge(live, reports);
    else void this.done.then(() => this.judge(live, undefined));
  }

  private judge(live: CachedReply, reports: SkillReports | undefined): void {
    const found = this.found;
    if (found?.kind === 'miss') {
      void this.cache.record(found.recordKey, live);
      return;
    }
    if (found?.kind !== 'hit') return;
    const matched = this.cache.shadowCompare(found.reply, live);
    if (reports === undefined) return;
    const at = reports.list.findIndex((r) => r.skill === SKILL);
    const report = reports.list[at];
    if (report !== undefined) reports.list[at] = { ...report, detail: { ...report.detail, false_hit: !matched } };
  }
}
