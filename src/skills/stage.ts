/**
 * The contract between the engine (main thread), the worker entry and every
 * evaluator: what one stage receives, how it reports, and the outcomes a
 * stage can end with. Types and one small class only: both threads load it.
 */
import type { CatalogModel } from '../providers/catalog.js';
import type { FoldParams } from '../tenancy/skills.js';

/** Outcomes in headers and traces (x-gw-skill-<id>, trace `skills[].outcome`). */
export const OUTCOMES = ['applied', 'skipped', 'hit', 'miss', 'shadow', 'ceiling_exceeded', 'overloaded', 'loop_stalled', 'error'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/**
 * Outcomes that are a bypass trigger on an acting stage: the caller's original
 * bytes go straight to the provider. On any stage they count as failed open.
 */
export const FAIL_OPEN_OUTCOMES: ReadonlySet<Outcome> = new Set(['ceiling_exceeded', 'overloaded', 'loop_stalled', 'error']);

/** What an evaluator itself may answer: the rest are the engine's and the pool's to say. */
export type EvaluatorOutcome = 'applied' | 'skipped' | 'hit' | 'miss' | 'ceiling_exceeded';

/**
 * A stage's wall-clock end, as an absolute `Date.now()` time. Every thread of
 * the process reads the same clock, so the engine sets it and the worker
 * checks it. Evaluators poll it between units of work and give up with
 * `ceiling_exceeded` once it has passed; the pool's abort is only the backstop.
 */
export class Deadline {
  constructor(readonly at: number) {}

  remainingMs(): number {
    return this.at - Date.now();
  }

  expired(): boolean {
    return Date.now() >= this.at;
  }
}

/**
 * What the main thread knows about the request and the worker cannot: the
 * org's allowed models and reachable providers (model_routing), the model
 * the request names where the body does not carry it (a model in the URL),
 * and the key's `skill_params` (agent_trajectory_compaction). Plain data: it
 * crosses to the worker with the task.
 */
export interface StageContext {
  /** catalog ids the org may call; absent: every catalog model */
  allowedModels?: string[];
  /** providers with a credential or destination for this request; absent: every provider */
  reachableProviders?: string[];
  /** the model the request names when the body does not carry it (generate-content, converse) */
  model?: string;
  /** the key's `skill_params.agent_trajectory_compaction` */
  foldParams?: FoldParams;
}

/** One stage's view of the request, inside the worker. */
export interface StageInput {
  /** the table row's id */
  readonly stage: string;
  /** the surface id the request came in on (each surface has its own message shape) */
  readonly surface: string;
  /** false in shadow: decide as if acting; the engine records the decision and discards it */
  readonly acting: boolean;
  /** the body as it stands at this stage; read-only (it may be shared with other stages) */
  readonly body: Uint8Array;
  /** what the main thread adds for the stages that need it */
  readonly context?: StageContext;
  /** the body as UTF-8 text, decoded once */
  text(): string;
  /**
   * the body parsed as JSON, once for every stage of the task that reads the
   * same bytes: read it, never change it (a stage that edits parses its own
   * copy); throws on a body that is not JSON
   */
  json(): unknown;
}

/** A refusal the engine turns into a GatewayError of this type (errors cross threads as data). */
export interface StageRefusal {
  type: 'guardrail_violation' | 'request_error';
  message: string;
  /** extra fields of the error object, e.g. `detected` */
  fields?: Record<string, unknown>;
}

/**
 * A complete answer that sends nothing upstream: a whole body, or a stream's
 * events written in order. `replayed`: a reply the gateway stored for an
 * earlier request (a cache hit), whose per-call fields the route freshens.
 */
export type StageAnswer =
  | { status: number; contentType: string; body: Uint8Array; replayed?: true }
  | { status: number; contentType: string; chunks: readonly Uint8Array[]; replayed?: true };

/** What an evaluator returns. Only an acting stage's change, answer or refusal is applied. */
export interface StageResult {
  outcome: EvaluatorOutcome;
  /** for the trace: kinds and counts, never the caller's values */
  detail?: Record<string, unknown>;
  /** a new body for the following stages and the upstream call, and/or another model */
  change?: { body?: Uint8Array; model?: string };
  answer?: StageAnswer;
  refuse?: StageRefusal;
  /**
   * placeholder → the caller's value (pii_redaction): the engine hands it only
   * to the reply restorer, never to the trace, the row, the cache or logs
   */
  restore?: Record<string, string>;
  /** semantic_cache: the request's cache keys and signature, for the main thread's store lookup */
  cache?: StageCacheKeys;
}

/**
 * What the semantic_cache evaluator computes in the worker: fixed-size keys
 * and signatures, so the main thread's lookup costs the same whatever the
 * prompt's size. The main thread adds the org, provider, model and stream flag.
 */
export interface StageCacheKeys {
  /** hash of the surface and every body field that can change the answer (system prompt, tools, sampling, response format) */
  scope: string;
  /** hash of the scope and the normalised conversation */
  exact: string;
  /** the last user turn's near-duplicate signature; absent when the last turn is not plain user text */
  near?: NearSignature;
  /** the body asks for a streamed reply (surfaces that say so in the path: the main thread reads it there) */
  stream: boolean;
}

export interface NearSignature {
  /** hash of the scope and every turn before the last user turn */
  preceding: string;
  /** hash of the last user turn's negation words, numbers and named-entity tokens */
  invariants: string;
  /** MinHash of the word 3-shingles (one minimum per permutation) */
  minhash: Uint32Array;
  /** hashed character-trigram counts, unit length */
  vector: Float32Array;
  /** LSH band keys of the MinHash (each hashes one band with the preceding turns and invariants) */
  bands: string[];
}

/**
 * The function every evaluator module exports under the name its table row
 * gives. It runs in a worker thread; it may be async, and must poll `deadline`.
 */
export type Evaluator = (input: StageInput, deadline: Deadline) => StageResult | Promise<StageResult>;

/** The task's `started` slot: the worker sets it to running, then finished (read by the pool's backstop). */
export const STAGE_RUNNING = 1;
export const STAGE_FINISHED = 2;
/**
 * Int32s per stage in shared memory: the stage's state; the id of the thread
 * running it (the backstop's target); when it started, in ms after its task's
 * `deadlineAt` (negative before it), so the pool times a follower's ceiling
 * from its own start; the kernel's id of that thread (0 where unknown), whose
 * scheduler times tell the backstop a stuck stage from a starved one.
 */
export const STARTED_SLOT_INTS = 4;

/**
 * A stage that runs in the same task right after the task's own stage (and
 * the followers before it): it saves a round trip to a thread of its own (a
 * wake-up, two messages and the loop's wake-up), which costs more than most
 * stages' work. An acting follower reads the body the acting stages before it
 * produced and stops the task like the task's own stage; a shadow one reads
 * that body and stops nothing. Its ceiling counts from its own start.
 */
export interface FollowerStage {
  stage: string;
  acting: boolean;
  ceilingMs: number;
  /** its own STARTED_SLOT_INTS slot */
  started: Int32Array;
}

/** One stage as the pool sends it to a worker. */
export interface StageTask {
  stage: string;
  surface: string;
  acting: boolean;
  body: Uint8Array;
  context?: StageContext;
  deadlineAt: number;
  /** stages to run after this one, in order, while every acting stage before them lets the request go on (no refusal, no answer, deadline kept) */
  followers?: FollowerStage[];
  /**
   * STARTED_SLOT_INTS Int32s in shared memory: the worker sets the state when it starts and when it finishes
   * the stage, and its thread id: the backstop reads whether the stage is running, and on which thread
   */
  started: Int32Array;
}

/**
 * Stages handed to the pool while every thread was busy, sent as one task: a
 * thread runs them in order, each under its own deadline and in its own
 * started slot, and replies once with a reply per stage, in the same order.
 */
export interface StageBatch {
  batch: StageTask[];
}

/** A worker's reply: the evaluator's result, or the error it threw, with its own run time. */
export interface StageReply {
  result?: StageResult;
  /** set when the evaluator threw or returned nothing usable */
  error?: string;
  runMs: number;
  /** the followers' replies, in order; absent when they did not run */
  followers?: StageReply[];
}

/** What the pool hands each thread at start: the evaluators to load, by stage id. */
export interface WorkerEvaluators {
  evaluators: ReadonlyArray<{ id: string; module: string; export: string }>;
  /** the main thread's catalog (operator file and self-hosted models applied): a thread's own import holds only the shipped models */
  catalog?: readonly CatalogModel[];
  /** a thread for shadow work beside dispatch: it lowers its own CPU priority at start */
  background?: true;
}
