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

  header(): string {
    const parts = this.done.map(([n, ms]) => `${n};dur=${ms.toFixed(2)}`);
    if (this.running) parts.push(`${this.running.name};dur=${(performance.now() - this.running.at).toFixed(2)};running`);
    return parts.join(', ');
  }
}
