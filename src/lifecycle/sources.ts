import { setImmediate } from 'node:timers/promises';
import type { TransitionRecord } from '../tenancy/skills.js';
import type { RowSkill, ScorecardRow, ScorecardRowSink } from './rows.js';
import { isArm, SkillSamples, type ArmName, type SampleRow } from './samples.js';

/** Where a scorecard's samples come from: the durable store (Redis) or the answering process's window. */

/** Which samples a read wants. */
export interface SampleQuery {
  skill: string;
  /** requests at or after this time (ms since the epoch) */
  sinceMs: number;
  /** the end of the window: the time of the read */
  nowMs: number;
  /** the name of the samples a key's requests go into, or undefined to leave the key out */
  group(keyId: string): string | undefined;
  /**
   * A key named here counts only requests served since this transition of the
   * skill: rows served under an earlier mode do not judge the current one.
   */
  since?: ReadonlyMap<string, Pick<TransitionRecord, 'id' | 'timestamp'>>;
}

export type StoreKind = 'durable' | 'process';

/** Where a scorecard's samples come from; `kind` is what `source.store` says. */
export interface SampleSource {
  readonly kind: StoreKind;
  /** one tenant's samples of a skill, by group */
  samples(tenant: string, q: SampleQuery): Promise<Map<string, SkillSamples>>;
}

/** Rows a read goes over in one turn of the event loop: 4-5 ms of samples, warm, on the 2-core VM of docs/performance.md. */
const READ_SLICE_ROWS = 2048;

/** A skill's arm in the window's columns; 0: the row is no sample of that skill. */
const ARM_CODE: Readonly<Record<ArmName, number>> = { treatment: 1, control: 2, shadow: 3 };
const ARM_OF: Readonly<Record<number, ArmName>> = { 1: 'treatment', 2: 'control', 3: 'shadow' };

/** One scored skill's part in the window's rows, a column each. */
interface SkillColumns {
  arm: Uint8Array;
  outcome: Array<string | undefined>;
  detail: Array<RowSkill['detail']>;
}

/**
 * The answering process's own recent rows, for a gateway without a durable
 * store: a ring of the last `capacity` rows of every tenant, fed by record()
 * with every finished request (the telemetry row sink, main.ts), summed into
 * samples on each read, a slice of rows per turn of the event loop (a row
 * recorded meanwhile may or may not be counted, as with a read a moment
 * later). It holds only what this process served and forgets on restart.
 *
 * A row is kept as the columns its samples are made of, in arrays (numbers in
 * typed ones), not as the row: the telemetry row has some forty fields and an
 * entry per skill, and 50,000 of them kept 40-50 MB alive in the main
 * isolate, which every full collection marks again. A row that is no
 * scorecard's sample (the guardrails' entry alone) takes its slot but keeps
 * nothing, so the window forgets the older rows as it did.
 */
export class ProcessRowWindow implements SampleSource, ScorecardRowSink {
  readonly kind = 'process';
  private next = 0;
  private readonly skills: readonly string[];
  private readonly bySkill: SkillColumns[];
  /** undefined: an empty slot, or a row that was no sample */
  private readonly tenant: Array<string | undefined>;
  private readonly key: Array<string | undefined>;
  private readonly ts: Array<string | undefined>;
  private readonly session: Array<string | null>;
  private readonly task: Array<string | null>;
  private readonly relayReason: Array<string | null>;
  private readonly status: Uint16Array;
  private readonly latency: Float64Array;
  /** NaN: null */
  private readonly overhead: Float64Array;
  private readonly cost: Float64Array;
  private readonly saved: Float64Array;
  private readonly retry: Uint8Array;
  /** 0: not measured, 1: not faithful, 2: faithful */
  private readonly fidelity: Uint8Array;

  /** `scored`: the skills scorecards read (the per-key skills), as the durable store is given them */
  constructor(
    readonly capacity: number,
    scored: ReadonlySet<string>,
  ) {
    const strings = <T>(fill: T) => new Array<T>(capacity).fill(fill);
    this.skills = [...scored];
    this.bySkill = this.skills.map(() => ({ arm: new Uint8Array(capacity), outcome: strings(undefined), detail: strings(undefined) }));
    this.tenant = strings(undefined);
    this.key = strings(undefined);
    this.ts = strings(undefined);
    this.session = strings(null);
    this.task = strings(null);
    this.relayReason = strings(null);
    this.status = new Uint16Array(capacity);
    this.latency = new Float64Array(capacity);
    this.overhead = new Float64Array(capacity);
    this.cost = new Float64Array(capacity);
    this.saved = new Float64Array(capacity);
    this.retry = new Uint8Array(capacity);
    this.fidelity = new Uint8Array(capacity);
  }

  record(row: ScorecardRow): void {
    const i = this.next;
    this.next = (i + 1) % this.capacity;
    let sample = false;
    for (let j = 0; j < this.skills.length; j++) {
      const s = row.skills[this.skills[j]!];
      const columns = this.bySkill[j]!;
      const arm = s !== undefined && isArm(s.arm) ? ARM_CODE[s.arm] : 0;
      columns.arm[i] = arm;
      columns.outcome[i] = arm === 0 ? undefined : s!.outcome;
      columns.detail[i] = arm === 0 ? undefined : s!.detail;
      sample ||= arm !== 0;
    }
    if (!sample) {
      // a row that is no sample keeps nothing: its strings let go, its numbers are never read
      this.tenant[i] = this.key[i] = this.ts[i] = undefined;
      this.session[i] = this.task[i] = this.relayReason[i] = null;
      return;
    }
    this.tenant[i] = row.tenant_id;
    this.key[i] = row.key_id;
    this.ts[i] = row.ts;
    this.session[i] = row.session_id;
    this.task[i] = row.task_id;
    this.relayReason[i] = row.relay_reason;
    this.status[i] = row.status;
    this.latency[i] = row.latency_ms;
    this.overhead[i] = row.overhead_ms ?? Number.NaN;
    this.cost[i] = row.cost_usd;
    this.saved[i] = row.tokens_saved;
    this.retry[i] = row.retry ? 1 : 0;
    this.fidelity[i] = row.tool_fidelity === null ? 0 : row.tool_fidelity ? 2 : 1;
  }

  async samples(tenant: string, q: SampleQuery): Promise<Map<string, SkillSamples>> {
    const out = new Map<string, SkillSamples>();
    const j = this.skills.indexOf(q.skill);
    if (j < 0) return out;
    const { arm, outcome, detail } = this.bySkill[j]!;
    // rows use one ISO 8601 form (UTC, milliseconds), so times compare as strings without parsing each row
    const since = new Date(q.sinceMs).toISOString();
    // one row at a time is read through this view, which the samples do not keep
    const view: SampleRow = { ts: '', session_id: null, task_id: null, status: 0, latency_ms: 0, overhead_ms: null, cost_usd: 0, tokens_saved: 0, retry: false, relay_reason: null, tool_fidelity: null };
    for (let i = 0; i < this.capacity; i++) {
      // a full window of one tenant's samples takes tens of ms: the requests in flight get the loop between slices
      if (i > 0 && i % READ_SLICE_ROWS === 0) await setImmediate();
      const code = arm[i]!;
      const ts = this.ts[i]!;
      if (code === 0 || this.tenant[i] !== tenant || ts < since) continue;
      const keyId = this.key[i]!;
      const group = q.group(keyId);
      if (group === undefined) continue;
      const transition = q.since?.get(keyId);
      if (transition !== undefined && ts < transition.timestamp) continue;
      let samples = out.get(group);
      if (samples === undefined) out.set(group, (samples = new SkillSamples()));
      const overhead = this.overhead[i]!;
      const fidelity = this.fidelity[i]!;
      view.ts = ts;
      view.session_id = this.session[i]!;
      view.task_id = this.task[i]!;
      view.status = this.status[i]!;
      view.latency_ms = this.latency[i]!;
      view.overhead_ms = Number.isNaN(overhead) ? null : overhead;
      view.cost_usd = this.cost[i]!;
      view.tokens_saved = this.saved[i]!;
      view.retry = this.retry[i] === 1;
      view.relay_reason = this.relayReason[i]!;
      view.tool_fidelity = fidelity === 0 ? null : fidelity === 2;
      const armName = ARM_OF[code]!;
      samples.arms[armName].addRow(view, outcome[i]!, detail[i], armName);
    }
    return out;
  }
}
