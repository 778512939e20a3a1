import { GatewayError } from '../errors.js';
import type { HeaderList } from '../http/types.js';
import type { DestinationRouter, RefusedByServer, RoutedCall } from '../pipeline/types.js';
import type { CatalogModel } from '../providers/catalog.js';
import { loadedAdapters, loraRequests } from '../providers/selfhosted.js';
import type { ProviderCredential } from '../providers/types.js';
import type { Logger } from '../telemetry/log.js';
import type { Metrics } from '../telemetry/metrics.js';
import { failureKind, type Upstream } from '../upstream/client.js';
import type { OriginHealth } from '../upstream/health.js';
import { requestWhole, type WholeReply } from '../upstream/whole.js';
import { AdapterSlots, NoRoomNow, ServerRefusal, type LoraServer } from './adapters.js';
import type { DestinationEntry } from './file.js';

export interface DestinationsDeps {
  upstream: Upstream;
  health: OriginHealth;
  metrics: Metrics;
  log: Logger;
  /** a destination's concurrency limit when its entry sets none (GW_UPSTREAM_MAX_INFLIGHT) */
  defaultMaxInflight: number;
}

/** One self-hosted server and what this replica knows of it. */
class Destination {
  inflight = 0;
  readonly maxInflight: number;
  readonly slots: AdapterSlots;
  readonly credential: ProviderCredential;

  constructor(
    readonly entry: DestinationEntry,
    deps: DestinationsDeps,
  ) {
    this.maxInflight = entry.max_inflight ?? deps.defaultMaxInflight;
    this.credential = { secret: entry.api_key ?? '', scheme: 'bearer', source: 'stored' };
    this.slots = new AdapterSlots(entry.id, entry.adapters ?? {}, entry.adapter_memory_mb, loraServer(deps.upstream, entry), deps.metrics);
  }

  get id(): string {
    return this.entry.id;
  }

  /** merit: the cheaper first (input plus output price per million tokens) */
  get priceSum(): number {
    return (this.entry.price?.input ?? 0) + (this.entry.price?.output ?? 0);
  }

  holds(model: string): boolean {
    return this.entry.models.includes(model) || this.slots.has(model);
  }
}

function loraServer(upstream: Upstream, e: DestinationEntry): LoraServer {
  return {
    load: (name, path) => requestWhole(upstream, loraRequests.load(e.origin, name, path, e.api_key)),
    unload: (name) => requestWhole(upstream, loraRequests.unload(e.origin, name, e.api_key)),
    async listLoaded() {
      const reply = await requestWhole(upstream, loraRequests.models(e.origin, e.api_key));
      if (reply.status !== 200) throw new Error(`GET /v1/models on ${e.origin} answered ${reply.status}`);
      return loadedAdapters(JSON.parse(reply.body.toString('utf8')));
    },
  };
}

const NONE_TRIED: ReadonlySet<string> = new Set();

/** Calls finished within this window measure how fast destinations drain, for Retry-After. */
const DRAIN_WINDOW_S = 10;

/**
 * The operator's self-hosted model servers (GW_DESTINATIONS_FILE): which
 * serve a model, which is reachable, and the merit order a call tries them
 * in: the cheaper first, then the reachable, then the one with more free
 * capacity; a destination at its `max_inflight` is skipped. A call naming a
 * LoRA adapter goes to a destination holding its base model and the adapter
 * is loaded there first when it is not (src/destinations/adapters.ts).
 */
export class Destinations implements DestinationRouter {
  private readonly all: Destination[];
  /** calls ended per second of the drain window, and which second each slot counts */
  private readonly drained = new Array<number>(DRAIN_WINDOW_S).fill(0);
  private readonly drainedSecond = new Array<number>(DRAIN_WINDOW_S).fill(-1);

  constructor(
    entries: readonly DestinationEntry[],
    private readonly deps: DestinationsDeps,
    private readonly clock: () => number = Date.now,
  ) {
    this.all = entries.map((e) => new Destination(e, deps));
  }

  /** Rebuilds what each destination has loaded from its server's model list (after a gateway restart); an unreachable server starts empty. */
  async start(): Promise<void> {
    await Promise.all(
      this.all.map(async (d) => {
        try {
          const loaded = await loraServer(this.deps.upstream, d.entry).listLoaded();
          d.slots.adopt(loaded);
        } catch (err) {
          this.deps.log.warn({ err, destination: d.id }, 'could not list the adapters a destination has loaded; assuming none');
        }
      }),
    );
  }

  /** whether /v1/models lists self-hosted model `m`: a base model (never an adapter) while a destination holding it is reachable */
  lists(m: CatalogModel): boolean {
    if (m.base_model !== undefined) return false;
    return this.all.some((d) => d.entry.models.includes(m.id) && this.deps.health.reachable(d.entry.origin));
  }

  /** what a destination holds now, least recently used first (for tests and diagnostics) */
  loadedAdapters(destinationId: string): string[] {
    return this.all.find((d) => d.id === destinationId)?.slots.loadedNames() ?? [];
  }

  async route(model: string | undefined, tried: ReadonlySet<string> = NONE_TRIED): Promise<RoutedCall | RefusedByServer | undefined> {
    const holding = model === undefined ? [] : this.all.filter((d) => d.holds(model));
    if (model === undefined || holding.length === 0) throw new GatewayError('request_error', `model: no destination serves ${JSON.stringify(model)}`, { fields: { field: 'model' } });
    const adapter = holding.some((d) => d.slots.has(model));
    const fitting = adapter ? holding.filter((d) => d.slots.fits(model)) : holding;
    if (fitting.length === 0) {
      throw new GatewayError('adapter_unavailable', `adapter ${model} is larger than the adapter memory of every destination holding its base model`);
    }
    const untried = fitting.filter((d) => !tried.has(d.id));
    if (untried.length === 0) return undefined;
    let unreachable: GatewayError | undefined;
    for (const d of this.meritOrder(untried)) {
      if (d.inflight >= d.maxInflight) continue;
      d.inflight++;
      let unpin = () => {};
      if (adapter) {
        try {
          unpin = await d.slots.acquire(model);
        } catch (err) {
          d.inflight--;
          if (err instanceof NoRoomNow) continue;
          if (err instanceof ServerRefusal) return refused(err.reply);
          unreachable = this.unreachable(d, err);
          // a load that could not connect sent nothing: the next destination may load it
          if (err instanceof Error && failureKind(err) === 'connect') continue;
          throw unreachable;
        }
      }
      return this.routed(d, model, adapter, unpin);
    }
    if (unreachable) throw unreachable;
    throw new GatewayError('overloaded', `every destination serving ${model} is at its concurrency limit`, { summary: true, retryAfterS: this.retryAfterS() });
  }

  private meritOrder(ds: readonly Destination[]): Destination[] {
    const up = (d: Destination) => (this.deps.health.reachable(d.entry.origin) ? 0 : 1);
    return [...ds].sort((a, b) => a.priceSum - b.priceSum || up(a) - up(b) || b.maxInflight - b.inflight - (a.maxInflight - a.inflight));
  }

  private routed(d: Destination, model: string, adapter: boolean, unpin: () => void): RoutedCall {
    let released = false;
    return {
      kind: 'routed',
      origin: d.entry.origin,
      credential: d.credential,
      destination_id: d.id,
      model_serving_route: `selfhosted:${d.id}/${model}`,
      price: { input: d.entry.price?.input ?? 0, output: d.entry.price?.output ?? 0 },
      release: () => {
        if (released) return;
        released = true;
        d.inflight--;
        if (adapter) unpin();
        this.noteEnded();
      },
    };
  }

  private unreachable(d: Destination, err: unknown): GatewayError {
    this.deps.health.failed(d.entry.origin);
    return new GatewayError('upstream_unavailable', `destination ${d.id} could not be reached to load an adapter`, { cause: err });
  }

  private noteEnded(): void {
    const second = Math.floor(this.clock() / 1000);
    const i = second % DRAIN_WINDOW_S;
    if (this.drainedSecond[i] !== second) {
      this.drainedSecond[i] = second;
      this.drained[i] = 0;
    }
    this.drained[i] = (this.drained[i] as number) + 1;
  }

  /** seconds until a slot is likely free, from how many calls ended in the last window: 1 to 30 (30 when none did) */
  private retryAfterS(): number {
    const second = Math.floor(this.clock() / 1000);
    let recent = 0;
    for (let i = 0; i < DRAIN_WINDOW_S; i++) if ((this.drainedSecond[i] as number) > second - DRAIN_WINDOW_S) recent += this.drained[i] as number;
    if (recent === 0) return 30;
    return Math.min(30, Math.max(1, Math.ceil(DRAIN_WINDOW_S / recent)));
  }
}

function refused(reply: WholeReply): RefusedByServer {
  const type = reply.headers['content-type'];
  const headers: HeaderList = [['content-type', typeof type === 'string' ? type : 'application/json']];
  return { kind: 'refused', status: reply.status, headers, body: reply.body };
}
