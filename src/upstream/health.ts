/** Consecutive connection failures after which a provider counts as unreachable. */
const FAILURES_TO_MARK_DOWN = 3;
/** How long it then stays out of /v1/models; calls still go through, and one success restores it. */
const DOWN_FOR_MS = 30_000;

/**
 * Which providers currently have a reachable destination, from what calls
 * saw: a provider whose last few calls could not connect (refused, reset,
 * timed out) is down for a while. Only reads from memory; no probing traffic.
 */
export class ProviderHealth {
  private readonly state = new Map<string, { failures: number; downUntil: number }>();

  constructor(private readonly clock: () => number = Date.now) {}

  succeeded(provider: string): void {
    this.state.delete(provider);
  }

  failed(provider: string): void {
    const s = this.state.get(provider) ?? { failures: 0, downUntil: 0 };
    s.failures++;
    if (s.failures >= FAILURES_TO_MARK_DOWN) s.downUntil = this.clock() + DOWN_FOR_MS;
    this.state.set(provider, s);
  }

  reachable(provider: string): boolean {
    const s = this.state.get(provider);
    return s === undefined || s.downUntil <= this.clock();
  }
}
