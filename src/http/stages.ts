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

  header(): string {
    const parts = this.done.map(([n, ms]) => `${n};dur=${ms.toFixed(2)}`);
    if (this.running) parts.push(`${this.running.name};dur=${(performance.now() - this.running.at).toFixed(2)};running`);
    return parts.join(', ');
  }
}
