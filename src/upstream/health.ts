/** Consecutive connection failures after which an origin counts as unreachable. */
const FAILURES_TO_MARK_DOWN = 3;
/** How long it then stays out of /v1/models; calls still go through, and one success restores it. */
const DOWN_FOR_MS = 30_000;

/**
 * Which upstream origins are currently reachable, from what calls saw: an
 * origin whose last few calls could not connect (refused, timed out) is down
 * for a while. Kept per origin, so one tenant's unreachable region or Azure
 * resource says nothing about the provider's default destination. Only reads
 * from memory; no probing traffic.
 */
export class OriginHealth {
  private readonly state = new Map<string, { failures: number; downUntil: number }>();

  constructor(private readonly clock: () => number = Date.now) {}

  succeeded(origin: string): void {
    this.state.delete(origin);
  }

  failed(origin: string): void {
    const s = this.state.get(origin) ?? { failures: 0, downUntil: 0 };
    s.failures++;
    if (s.failures >= FAILURES_TO_MARK_DOWN) s.downUntil = this.clock() + DOWN_FOR_MS;
    this.state.set(origin, s);
  }

  reachable(origin: string): boolean {
    const s = this.state.get(origin);
    return s === undefined || s.downUntil <= this.clock();
  }
}
