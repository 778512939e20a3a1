/** How a write was heard back: whether its own message came back, and how many other replicas never said they applied it. */
export interface Heard {
  echoed: boolean;
  missing: number;
}

interface Pending {
  echoed: boolean;
  acks: number;
  /** acks wanted: unknown until the write script says how many subscribers its message reached */
  wanted: number;
  settle: (heard: Heard) => void;
  timer: NodeJS.Timeout;
}

/** A message token is `<origin>:<sequence>`, the origin a replica's random UUID. */
const TOKEN = /^([0-9a-f-]{36}):\d+$/;

/** The replica that wrote the message a token names, or undefined for a token of another shape. */
export function originOf(token: string): string | undefined {
  return TOKEN.exec(token)?.[1];
}

/**
 * The writes of one replica waiting to be heard back. A write is done when
 * its own message came back (this replica applied it) and every other
 * subscriber the message reached acknowledged applying it, so a change
 * answered to its caller is in force on every replica from the next request
 * on; or when the wait bound lapses (a replica stopped or gone), and the
 * caller is told what is missing.
 */
export class WriteConfirmations {
  private readonly pending = new Map<string, Pending>();

  constructor(private readonly waitMs: number) {}

  /** Starts listening for the token before the write is sent: acks may come back before the script's own reply. */
  expect(token: string): { reached(subscribers: number): Promise<Heard>; cancel(): void } {
    let settle: (heard: Heard) => void = () => undefined;
    const heard = new Promise<Heard>((resolve) => (settle = resolve));
    const entry: Pending = {
      echoed: false,
      acks: 0,
      wanted: Number.POSITIVE_INFINITY,
      settle,
      timer: setTimeout(() => this.finish(token, entry), this.waitMs),
    };
    this.pending.set(token, entry);
    return {
      // the subscribers the message reached include this replica's own
      reached: (subscribers: number) => {
        entry.wanted = Math.max(0, subscribers - 1);
        // the bound may have lapsed while the script ran: then the answer is already settled
        if (this.pending.has(token)) this.check(token, entry);
        return heard;
      },
      cancel: () => {
        clearTimeout(entry.timer);
        this.pending.delete(token);
      },
    };
  }

  /** This replica applied its own message. */
  echoed(token: string): void {
    const entry = this.pending.get(token);
    if (!entry) return;
    entry.echoed = true;
    this.check(token, entry);
  }

  /** Another replica applied the message. */
  acked(token: string): void {
    const entry = this.pending.get(token);
    if (!entry) return;
    entry.acks++;
    this.check(token, entry);
  }

  /** The store is closing: nothing more will be heard, and no writer waits out its bound. */
  releaseAll(): void {
    for (const [token, entry] of this.pending) this.finish(token, entry, { echoed: true, missing: 0 });
  }

  private check(token: string, entry: Pending): void {
    if (entry.echoed && entry.acks >= entry.wanted) this.finish(token, entry);
  }

  /** Settles the write: as heard so far unless told otherwise (a wanted count still unknown misses nobody). */
  private finish(token: string, entry: Pending, heard?: Heard): void {
    clearTimeout(entry.timer);
    this.pending.delete(token);
    entry.settle(heard ?? { echoed: entry.echoed, missing: Number.isFinite(entry.wanted) ? Math.max(0, entry.wanted - entry.acks) : 0 });
  }
}
