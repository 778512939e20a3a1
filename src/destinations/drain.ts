/** Calls finished within this window measure how fast destinations drain, for Retry-After. */
const DRAIN_WINDOW_S = 10;

/**
 * How fast calls to a set of destinations end, per second over the last
 * 10 s: the Retry-After of a dispatch-side shed (every destination at its
 * concurrency limit) says when a slot is likely free.
 */
export class DrainWindow {
  /** calls ended per second of the window, and which second each slot counts */
  private readonly drained = new Array<number>(DRAIN_WINDOW_S).fill(0);
  private readonly drainedSecond = new Array<number>(DRAIN_WINDOW_S).fill(-1);

  constructor(private readonly clock: () => number = Date.now) {}

  noteEnded(): void {
    const second = Math.floor(this.clock() / 1000);
    const i = second % DRAIN_WINDOW_S;
    if (this.drainedSecond[i] !== second) {
      this.drainedSecond[i] = second;
      this.drained[i] = 0;
    }
    this.drained[i] = (this.drained[i] as number) + 1;
  }

  /** seconds until a slot is likely free, from how many calls ended in the last window: 1 to 30 (30 when none did) */
  retryAfterS(): number {
    const second = Math.floor(this.clock() / 1000);
    let recent = 0;
    for (let i = 0; i < DRAIN_WINDOW_S; i++) if ((this.drainedSecond[i] as number) > second - DRAIN_WINDOW_S) recent += this.drained[i] as number;
    if (recent === 0) return 30;
    return Math.min(30, Math.max(1, Math.ceil(DRAIN_WINDOW_S / recent)));
  }
}
