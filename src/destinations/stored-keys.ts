import { GatewayError } from '../errors.js';
import type { HeaderList } from '../http/types.js';
import { nothingSent } from '../pipeline/fallback.js';
import type { DestinationPicker, DispatchOutcome, DispatchStep, HoldRule, PickedDestination, PlaceKey } from '../pipeline/types.js';
import type { ProviderId } from '../providers/types.js';
import type { CoolDowns } from '../stores/cool-downs.js';
import type { StoredDestination } from '../tenancy/vendor-keys.js';
import { retryAfterMs } from '../upstream/retry-after.js';
import { DrainWindow } from './drain.js';

/** A vendor's 429 or 5xx, or a call that never left (no connection, its origin full): nothing was billed, so another key may take the call. */
const MOVES_ON: HoldRule = {
  status: (s) => s === 429 || s >= 500,
  error: nothingSent,
};

/**
 * The longest cool-down a vendor's retry hint (`Retry-After`, `retry-after-ms`)
 * sets: past it a hint more likely names a quota's reset than a key worth
 * avoiding, and a cooling key is still tried when no other can serve.
 */
const MAX_HINTED_COOL_DOWN_MS = 600_000;

/** A failed key's cool-down: GW_DESTINATION_COOLDOWN_S, or the vendor's longer hint up to MAX_HINTED_COOL_DOWN_MS. */
const coolDownFor = (base: number, hint: number | undefined): number => (hint === undefined ? base : Math.max(base, Math.min(hint, MAX_HINTED_COOL_DOWN_MS)));

/**
 * Merit order: the healthy keys, then the last resorts, then those cooling
 * down (a cool-down is a guess: an answer beats a refusal); within each, the
 * lower merit first, then the one with more free slots on this replica.
 */
const tierOf = (d: StoredDestination, cooling: ReadonlySet<string>): number => (cooling.has(d.id) ? 2 : 0) + (d.lastResort ? 1 : 0);

/**
 * An org's several stored keys of one provider as destinations of its calls
 * (merit-order dispatch): calls in flight per key on this replica (a key at
 * its `max_inflight` is skipped), and the cool-down of a key that failed,
 * shared by the replicas through `coolDowns`. A key whose region is outside
 * the allowed regions is passed over; the call is refused only when every
 * key is.
 */
export class StoredKeyDestinations {
  /** calls in flight per org and key on this replica */
  private readonly inflight = new Map<string, number>();
  readonly drain: DrainWindow;

  constructor(
    readonly coolDowns: CoolDowns,
    /** GW_DESTINATION_COOLDOWN_S in ms */
    readonly coolDownMs: number,
    readonly clock: () => number = Date.now,
  ) {
    this.drain = new DrainWindow(clock);
  }

  /** The picker of one call: the keys' cool-downs are read once, for the whole call. */
  picker(org: string, provider: ProviderId, keys: readonly StoredDestination[], place: PlaceKey): DestinationPicker | Promise<DestinationPicker> {
    const cooling = this.coolDowns.cooling(org, keys.map((k) => k.id));
    if (cooling instanceof Promise) return cooling.then((c) => new StoredKeyPicker(this, org, provider, keys, c, place));
    return new StoredKeyPicker(this, org, provider, keys, cooling, place);
  }

  inflightOf(org: string, id: string): number {
    return this.inflight.get(`${org}:${id}`) ?? 0;
  }

  /** whether the key is at its max_inflight on this replica: a call skips it */
  atLimit(org: string, d: StoredDestination): boolean {
    return d.maxInflight !== undefined && this.inflightOf(org, d.id) >= d.maxInflight;
  }

  /** takes a slot of the key, or false when it is at its limit */
  enter(org: string, d: StoredDestination): boolean {
    if (this.atLimit(org, d)) return false;
    this.inflight.set(`${org}:${d.id}`, this.inflightOf(org, d.id) + 1);
    return true;
  }

  leave(org: string, id: string): void {
    const key = `${org}:${id}`;
    const n = (this.inflight.get(key) ?? 1) - 1;
    if (n <= 0) this.inflight.delete(key);
    else this.inflight.set(key, n);
    this.drain.noteEnded();
  }
}

class StoredKeyPicker implements DestinationPicker {
  readonly movesOn = MOVES_ON;
  private readonly order: StoredDestination[];
  private readonly taken: DispatchStep[] = [];
  /** the residency refusal of a key passed over: the call's answer when no key is in an allowed region */
  private refused: GatewayError | undefined;

  constructor(
    private readonly keys: StoredKeyDestinations,
    private readonly org: string,
    private readonly provider: ProviderId,
    all: readonly StoredDestination[],
    private readonly cooling: ReadonlySet<string>,
    private readonly place: PlaceKey,
  ) {
    const free = (d: StoredDestination) => (d.maxInflight === undefined ? Number.MAX_SAFE_INTEGER : d.maxInflight - keys.inflightOf(org, d.id));
    this.order = [...all].sort((a, b) => tierOf(a, cooling) - tierOf(b, cooling) || a.merit - b.merit || free(b) - free(a));
  }

  next(tried: ReadonlySet<string>): PickedDestination | undefined {
    let atLimit = false;
    for (const d of this.order) {
      if (tried.has(d.id) || this.noted(d.id)) continue;
      const location = this.place(d.location);
      if (location instanceof GatewayError) {
        this.taken.push({ destination: d.id, outcome: 'region_excluded' });
        this.refused = location;
        continue;
      }
      if (!this.keys.enter(this.org, d)) {
        this.taken.push({ destination: d.id, outcome: 'at_limit' });
        atLimit = true;
        continue;
      }
      let released = false;
      return {
        id: d.id,
        credential: d.credential,
        location,
        release: () => {
          if (released) return;
          released = true;
          this.keys.leave(this.org, d.id);
        },
      };
    }
    if (atLimit && tried.size === 0) {
      throw new GatewayError('overloaded', `every stored ${this.provider} key ${this.refused ? 'in an allowed region ' : ''}is at its concurrency limit`, { summary: true, retryAfterS: this.keys.drain.retryAfterS() });
    }
    if (this.refused && tried.size === 0) throw this.refused;
    return undefined;
  }

  ended(id: string, outcome: DispatchOutcome, headers?: HeaderList): void {
    this.taken.push({ destination: id, outcome });
    // a full origin says nothing against the key: no cool-down
    if (outcome === 'served' || outcome === 'at_limit') return;
    const hint = headers && retryAfterMs(headers, this.keys.clock());
    this.keys.coolDowns.coolDown(this.org, id, coolDownFor(this.keys.coolDownMs, hint));
  }

  /** what was tried or passed over, in order, then the cooling keys that were not needed */
  readonly steps = (): DispatchStep[] => {
    const out = [...this.taken];
    for (const d of this.order) if (this.cooling.has(d.id) && !this.noted(d.id)) out.push({ destination: d.id, outcome: 'cooling' });
    return out;
  };

  private noted(id: string): boolean {
    return this.taken.some((s) => s.destination === id);
  }
}
