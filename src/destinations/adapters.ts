import type { Metrics } from '../telemetry/metrics.js';
import type { WholeReply } from '../upstream/whole.js';
import type { AdapterEntry } from './file.js';

/** How the adapter manager reaches its server (vLLM's dynamic LoRA API and model list). */
export interface LoraServer {
  load(name: string, path: string): Promise<WholeReply>;
  unload(name: string): Promise<WholeReply>;
  /** the adapters the server lists as loaded */
  listLoaded(): Promise<string[]>;
}

/** The server refused a load or an unload: its answer is relayed to the caller as it is. */
export class ServerRefusal extends Error {
  constructor(readonly reply: WholeReply) {
    super(`the model server refused the adapter call: ${reply.status}`);
  }
}

/** No room now: every loaded adapter that would have to go has calls in flight (another destination may have room). */
export class NoRoomNow extends Error {}

const ok = (r: WholeReply) => r.status >= 200 && r.status < 300;

/**
 * The LoRA adapters one destination holds, as the gateway loaded them. A
 * call pins its adapter from before the load until its reply ends, so an
 * adapter with calls in flight is never unloaded. Loads and evictions run one
 * at a time per destination; concurrent first calls for one adapter share its
 * load. To make room, the least recently used adapters (by their latest call)
 * go first.
 */
export class AdapterSlots {
  private readonly loaded = new Map<string, { sizeMb: number; lastUsed: number }>();
  private readonly pins = new Map<string, number>();
  private readonly loading = new Map<string, Promise<void>>();
  private queue: Promise<unknown> = Promise.resolve();
  /** a counter, not a clock: only the order of calls matters */
  private calls = 0;

  constructor(
    private readonly destinationId: string,
    private readonly adapters: Readonly<Record<string, AdapterEntry>>,
    private readonly budgetMb: number | undefined,
    private readonly server: LoraServer,
    private readonly metrics: Metrics,
  ) {}

  /** false when the adapter cannot fit in this destination's adapter memory even loaded alone */
  fits(name: string): boolean {
    const a = this.adapters[name];
    return a !== undefined && (this.budgetMb === undefined || a.size_mb <= this.budgetMb);
  }

  has(name: string): boolean {
    return this.adapters[name] !== undefined;
  }

  /** the adapters loaded now, least recently used first */
  loadedNames(): string[] {
    return [...this.loaded.entries()].sort((a, b) => a[1].lastUsed - b[1].lastUsed).map(([n]) => n);
  }

  /** takes the server's word for what it holds (after a gateway restart); adapters the file does not name are not managed */
  adopt(names: readonly string[]): void {
    for (const n of names) {
      const a = this.adapters[n];
      if (a && !this.loaded.has(n)) this.loaded.set(n, { sizeMb: a.size_mb, lastUsed: 0 });
    }
  }

  /** Loads `name` when it is not loaded and pins it; the returned function unpins it when the call's reply has ended. */
  async acquire(name: string): Promise<() => void> {
    this.pins.set(name, (this.pins.get(name) ?? 0) + 1);
    try {
      while (!this.loaded.has(name)) await this.loadOnce(name);
    } catch (err) {
      this.unpin(name);
      throw err;
    }
    (this.loaded.get(name) as { lastUsed: number }).lastUsed = ++this.calls;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.unpin(name);
    };
  }

  private unpin(name: string): void {
    const n = (this.pins.get(name) ?? 1) - 1;
    if (n <= 0) this.pins.delete(name);
    else this.pins.set(name, n);
  }

  /** the load in progress for `name`, or a new one queued behind this destination's other loads */
  private loadOnce(name: string): Promise<void> {
    const running = this.loading.get(name);
    if (running) return running;
    const load = this.queue.then(() => this.load(name));
    this.queue = load.catch(() => undefined);
    this.loading.set(name, load);
    const done = () => this.loading.delete(name);
    load.then(done, done);
    return load;
  }

  private async load(name: string): Promise<void> {
    if (this.loaded.has(name)) return;
    const adapter = this.adapters[name] as AdapterEntry;
    const started = performance.now();
    await this.makeRoom(name, adapter.size_mb);
    let reply: WholeReply;
    try {
      reply = await this.server.load(name, adapter.path);
    } catch (err) {
      this.metrics.adapterLoads.inc({ destination: this.destinationId, result: 'failed' });
      throw err;
    }
    if (!ok(reply)) {
      // another gateway replica may have loaded it: the server's list settles it
      if (await this.listedLoaded(name)) return this.adopt([name]);
      this.metrics.adapterLoads.inc({ destination: this.destinationId, result: 'refused' });
      throw new ServerRefusal(reply);
    }
    this.loaded.set(name, { sizeMb: adapter.size_mb, lastUsed: this.calls });
    this.metrics.adapterLoads.inc({ destination: this.destinationId, result: 'ok' });
    this.metrics.adapterLoadSeconds.observe({ destination: this.destinationId }, (performance.now() - started) / 1000);
  }

  private async listedLoaded(name: string): Promise<boolean> {
    try {
      return (await this.server.listLoaded()).includes(name);
    } catch {
      return false;
    }
  }

  /** unloads the least recently used unpinned adapters until `sizeMb` more fits */
  private async makeRoom(name: string, sizeMb: number): Promise<void> {
    const budget = this.budgetMb;
    if (budget === undefined) return;
    for (;;) {
      let used = 0;
      for (const s of this.loaded.values()) used += s.sizeMb;
      if (used + sizeMb <= budget) return;
      const victim = this.loadedNames().find((n) => n !== name && !this.pins.has(n));
      if (victim === undefined) throw new NoRoomNow(`adapter ${name} does not fit beside the adapters in use on ${this.destinationId}`);
      await this.evict(victim);
    }
  }

  private async evict(victim: string): Promise<void> {
    const held = this.loaded.get(victim) as { sizeMb: number; lastUsed: number };
    // out of the map first: a call arriving meanwhile queues a load behind this unload instead of using it
    this.loaded.delete(victim);
    let reply: WholeReply;
    try {
      reply = await this.server.unload(victim);
    } catch (err) {
      this.loaded.set(victim, held);
      throw err;
    }
    // 404: the server no longer holds it, which is what an unload is for
    if (!ok(reply) && reply.status !== 404) {
      this.loaded.set(victim, held);
      throw new ServerRefusal(reply);
    }
    this.metrics.adapterEvictions.inc({ destination: this.destinationId });
  }
}
