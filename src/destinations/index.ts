import { GatewayError } from '../errors.js';
import type { HeaderList } from '../http/types.js';
import type { DestinationRouter, DestinationSlot, RefusedByServer, RoutedCall } from '../pipeline/types.js';
import type { CatalogModel } from '../providers/catalog.js';
import { loadedAdapters, loraRequests } from '../providers/selfhosted.js';
import type { ProviderCredential } from '../providers/types.js';
import type { Logger } from '../telemetry/log.js';
import type { Metrics } from '../telemetry/metrics.js';
import { failureKind, type Upstream } from '../upstream/client.js';
import type { OriginHealth } from '../upstream/health.js';
import { requestWhole, type WholeReply } from '../upstream/whole.js';
import { AdapterSlots, NoRoomNow, ServerRefusal, type LoraServer } from './adapters.js';
import { DrainWindow } from './drain.js';
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
  private readonly drain: DrainWindow;

  constructor(
    entries: readonly DestinationEntry[],
    private readonly deps: DestinationsDeps,
    clock: () => number = Date.now,
  ) {
    this.all = entries.map((e) => new Destination(e, deps));
    this.drain = new DrainWindow(clock);
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

  slots(model: string | undefined): DestinationSlot[] | undefined {
    if (model === undefined) return undefined;
    const holding = this.all.filter((d) => d.holds(model));
    if (holding.length === 0 || holding.some((d) => d.slots.has(model))) return undefined;
    return holding.map((d) => ({ origin: d.entry.origin, atLimit: d.inflight >= d.maxInflight }));
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
    throw new GatewayError('overloaded', `every destination serving ${model} is at its concurrency limit`, { summary: true, retryAfterS: this.drain.retryAfterS() });
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
        this.drain.noteEnded();
      },
    };
  }

  private unreachable(d: Destination, err: unknown): GatewayError {
    this.deps.health.failed(d.entry.origin);
    return new GatewayError('upstream_unavailable', `destination ${d.id} could not be reached to load an adapter`, { cause: err });
  }
}

function refused(reply: WholeReply): RefusedByServer {
  const type = reply.headers['content-type'];
  const headers: HeaderList = [['content-type', typeof type === 'string' ? type : 'application/json']];
  return { kind: 'refused', status: reply.status, headers, body: reply.body };
}
