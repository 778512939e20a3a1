/** One stage's time as the decision record keeps it: ms to the hundredth, as the header shows it. */
export interface StageTiming {
  stage: string;
  ms: number;
  running?: true;
}

const hundredths = (ms: number): number => Math.round(ms * 100) / 100;

/**
 * A time (never negative) with two decimals, rounded as `timings()` rounds
 * (toFixed differs on exact ties such as 0.015, and was most of the
 * header's cost, a few calls per request).
 */
export function fixed2(ms: number): string {
  const c = Math.round(ms * 100);
  const frac = c % 100;
  return `${(c - frac) / 100}.${frac < 10 ? '0' : ''}${frac}`;
}

/**
 * Per-request stage timings, rendered as `x-gw-stage-durations`
 * (e.g. `auth;dur=0.02, byok_store;dur=30000;running`). A deadline answer names
 * the completed stages and the one still running.
 */
export class StageClock {
  private readonly done: Array<[string, number]> = [];
  private running: { name: string; at: number } | undefined;

  /** `startedAt`: performance.now() when the transport accepted the request */
  constructor(readonly startedAt: number = performance.now()) {}

  /** Starts `name`, closing any stage still running. */
  begin(name: string): void {
    const now = performance.now();
    if (this.running) this.done.push([this.running.name, now - this.running.at]);
    this.running = { name, at: now };
  }

  end(): void {
    if (!this.running) return;
    this.done.push([this.running.name, performance.now() - this.running.at]);
    this.running = undefined;
  }

  get elapsedMs(): number {
    return performance.now() - this.startedAt;
  }

  /** ms per stage so far, the running one up to now (a repeated stage adds up) */
  durations(): Record<string, number> {
    const out: Record<string, number> = {};
    const add = (name: string, ms: number) => (out[name] = Math.round(((out[name] ?? 0) + ms) * 1000) / 1000);
    for (const [n, ms] of this.done) add(n, ms);
    if (this.running) add(this.running.name, performance.now() - this.running.at);
    return out;
  }

  /** the timings of `header()` as values, for the decision record (no header to parse back) */
  timings(): StageTiming[] {
    const out: StageTiming[] = this.done.map(([stage, ms]) => ({ stage, ms: hundredths(ms) }));
    if (this.running) out.push({ stage: this.running.name, ms: hundredths(performance.now() - this.running.at), running: true });
    return out;
  }

  header(): string {
    const parts = this.done.map(([n, ms]) => `${n};dur=${fixed2(ms)}`);
    if (this.running) parts.push(`${this.running.name};dur=${fixed2(performance.now() - this.running.at)};running`);
    return parts.join(', ');
  }
}
