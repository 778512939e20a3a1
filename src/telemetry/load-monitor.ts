import { GatewayError } from '../errors.js';

/**
 * The replica's load, sampled on its own timer so nothing else (a metrics
 * scrape, a health check) resets it: how long the event loop was stalled
 * over the last window, how many requests and body bytes are in flight, how
 * fast requests complete, and whether anything was shed lately. The shedding
 * decisions read it (src/server/ingress.ts, src/pipeline/overload.ts,
 * src/upstream/inflight.ts); the skill engine asks it whether to shed shadow
 * work; /healthz and /readyz report it.
 */

export interface LoadMonitorOptions {
  /** GW_LOOP_STALL_WINDOW_S, in ms */
  windowMs: number;
  /** GW_LOOP_STALL_SHED_SHARE: above this share of the window stalled, heavy bodies are shed */
  stallShedShare: number;
  /** GW_INGRESS_BUDGET: shadow work stops once half of it is in flight */
  ingressBudget?: number;
  /** sampling period of the stall timer */
  tickMs?: number;
  /** counts a shed request by where it was shed (a metric) */
  countShed?: (where: ShedPlace) => void;
}

/** where a request was shed: the transport (budget, loop stall), engine entry, dispatch */
export type ShedPlace = 'ingress_budget' | 'loop_stall' | 'queue_wait' | 'upstream_inflight';

/** what /healthz reports under `overload` */
export interface OverloadReport {
  inflight_requests: number;
  inflight_bytes: number;
  loop_stall_share: number;
  shedding: boolean;
}

const DEFAULT_TICK_MS = 50;
/** the window is kept as this many buckets, rotated as time passes */
const BUCKETS = 20;
/** hysteresis: a state entered above its threshold is left only below this share of it */
const LOW_WATER = 0.75;
/** shadow skill work stops at half the share that sheds heavy requests, so it is shed before any request is */
const SHADOW_SHARE = 0.5;

export class LoadMonitor {
  inflightRequests = 0;
  inflightBytes = 0;
  private readonly stallMs: Float64Array;
  private readonly completions: Float64Array;
  private readonly bucketMs: number;
  private readonly tickMs: number;
  private bucket = 0;
  private bucketEnds: number;
  private lastTick: number;
  private timer: NodeJS.Timeout | undefined;
  private stalled = false;
  private shadowStalled = false;
  private lastShedAt = -Infinity;
  private draining = false;

  constructor(
    private readonly opts: LoadMonitorOptions,
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.tickMs = opts.tickMs ?? DEFAULT_TICK_MS;
    this.bucketMs = opts.windowMs / BUCKETS;
    this.stallMs = new Float64Array(BUCKETS);
    this.completions = new Float64Array(BUCKETS);
    this.lastTick = this.clock();
    this.bucketEnds = this.lastTick + this.bucketMs;
  }

  start(): void {
    this.lastTick = this.clock();
    this.timer = setInterval(() => this.sample(), this.tickMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * One sample: the timer's lateness is time the loop could not run it
   * (a stall), charged to the current bucket. Called by the timer; public so
   * a test can drive the clock.
   */
  sample(): void {
    const now = this.clock();
    const late = Math.max(0, now - this.lastTick - this.tickMs);
    this.lastTick = now;
    this.rotate(now);
    this.stallMs[this.bucket] = (this.stallMs[this.bucket] as number) + late;
    const share = this.loopStallShare;
    this.stalled = hysteresis(this.stalled, share, this.opts.stallShedShare);
    this.shadowStalled = hysteresis(this.shadowStalled, share, this.opts.stallShedShare * SHADOW_SHARE);
  }

  /** share of the window the event loop was stalled, 0 to 1 */
  get loopStallShare(): number {
    let sum = 0;
    for (const ms of this.stallMs) sum += ms;
    return Math.min(1, sum / this.opts.windowMs);
  }

  /** heavy bodies are shed while this holds (entered above GW_LOOP_STALL_SHED_SHARE, left below 3/4 of it) */
  get loopStalled(): boolean {
    return this.stalled;
  }

  /** a request accepted by the transport, with its declared (or so far read) body size */
  enter(bytes: number): void {
    this.inflightRequests++;
    this.inflightBytes += bytes;
  }

  /** more of a chunked body arrived */
  grow(bytes: number): void {
    this.inflightBytes += bytes;
  }

  /** a request answered (or abandoned): counted toward the drain rate */
  leave(bytes: number): void {
    this.inflightRequests--;
    this.inflightBytes -= bytes;
    this.rotate(this.clock());
    this.completions[this.bucket] = (this.completions[this.bucket] as number) + 1;
  }

  /**
   * A request shed at `where`: its 503 `overloaded` with a Retry-After from
   * the drain rate; /healthz says `shedding` and /readyz is 503 for a window.
   */
  shed(where: ShedPlace, message: string): GatewayError {
    this.noteShed(where);
    return withoutStack(() => new GatewayError('overloaded', message, { retryAfterS: this.retryAfterS() }));
  }

  /** a request answered with a shed decided elsewhere (src/upstream/inflight.ts): counted, and `shedding` for a window */
  noteShed(where: ShedPlace): void {
    this.lastShedAt = this.clock();
    this.opts.countShed?.(where);
  }

  get shedding(): boolean {
    return this.clock() - this.lastShedAt < this.opts.windowMs;
  }

  /**
   * Retry-After for an overloaded answer: how long the replica needs to
   * drain what is in flight at the rate it completed requests over the
   * window, 1 to 30 s (30 when nothing completed).
   */
  retryAfterS(): number {
    let done = 0;
    for (const n of this.completions) done += n;
    const perS = done / (this.opts.windowMs / 1000);
    if (perS === 0) return this.inflightRequests > 0 ? 30 : 1;
    return Math.min(30, Math.max(1, Math.ceil(this.inflightRequests / perS)));
  }

  /**
   * Shadow skill work is shed before any request is: at half the stall
   * share that sheds heavy bodies, once half the ingress budget is in
   * flight, and while anything was shed in the window.
   */
  shouldShedShadow(): boolean {
    const budget = this.opts.ingressBudget;
    return this.shadowStalled || this.shedding || (budget !== undefined && this.inflightBytes * 2 >= budget);
  }

  /** SIGTERM: the replica stops being ready while it finishes what it holds */
  drain(): void {
    this.draining = true;
  }

  /** /readyz: not while draining, nor while shedding */
  get ready(): boolean {
    return !this.draining && !this.shedding;
  }

  get isDraining(): boolean {
    return this.draining;
  }

  report(): OverloadReport {
    return {
      inflight_requests: this.inflightRequests,
      inflight_bytes: this.inflightBytes,
      loop_stall_share: Math.round(this.loopStallShare * 1000) / 1000,
      shedding: this.shedding,
    };
  }

  /** moves to the bucket `now` falls in, clearing the ones passed over */
  private rotate(now: number): void {
    let steps = 0;
    while (now >= this.bucketEnds && steps < BUCKETS) {
      this.bucket = (this.bucket + 1) % BUCKETS;
      this.stallMs[this.bucket] = 0;
      this.completions[this.bucket] = 0;
      this.bucketEnds += this.bucketMs;
      steps++;
    }
    // idle longer than the whole window: every bucket was cleared, start again from now
    if (now >= this.bucketEnds) this.bucketEnds = now + this.bucketMs;
  }
}

/** Builds a shed's error without a stack: a shed is not a fault, its stack would never be read, and capturing one was a fifth of a shed's cost. */
export function withoutStack<T>(make: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return make();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** entered above `threshold`, left only below LOW_WATER of it */
function hysteresis(on: boolean, value: number, threshold: number): boolean {
  return on ? value >= threshold * LOW_WATER : value > threshold;
}
