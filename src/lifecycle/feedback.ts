import type { TaskOutcome } from './scorecard.js';

/**
 * Task outcomes callers report (`POST /v1/feedback`), by tenant and feedback
 * id (a task id or a session id, see feedbackKey). The last word on an id
 * counts. Kept at least as long as the longest scorecard window.
 */
export interface FeedbackStore {
  record(tenant: string, id: string, outcome: TaskOutcome): Promise<void>;
  /** the outcomes known for these ids */
  outcomes(tenant: string, ids: readonly string[]): Promise<Map<string, TaskOutcome>>;
}

/** The longest scorecard window (7 days) plus a day: feedback outlives every window it can be read in */
export const FEEDBACK_RETENTION_MS = 8 * 24 * 3_600_000;

/**
 * Feedback in this process only (no Redis): bounded, oldest dropped first, and
 * forgotten after the retention.
 */
export class ProcessFeedback implements FeedbackStore {
  private readonly entries = new Map<string, { outcome: TaskOutcome; at: number }>();

  constructor(
    private readonly capacity: number,
    private readonly now: () => number = Date.now,
  ) {}

  async record(tenant: string, id: string, outcome: TaskOutcome): Promise<void> {
    const k = `${tenant}\u0000${id}`;
    // re-inserted so the Map's order stays oldest-first
    this.entries.delete(k);
    this.entries.set(k, { outcome, at: this.now() });
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
  }

  async outcomes(tenant: string, ids: readonly string[]): Promise<Map<string, TaskOutcome>> {
    const oldest = this.now() - FEEDBACK_RETENTION_MS;
    const out = new Map<string, TaskOutcome>();
    for (const id of ids) {
      const e = this.entries.get(`${tenant}\u0000${id}`);
      if (e !== undefined && e.at >= oldest) out.set(id, e.outcome);
    }
    return out;
  }
}
