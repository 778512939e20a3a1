import type { Location, ProviderAdapter } from './adapter.js';
import { cloudx } from './cloudx.js';
import { cloudy } from './cloudy.js';
import { genvendor } from './genvendor.js';
import { genvendorVertex } from './genvendor-vertex.js';
import { msgvendor } from './msgvendor.js';
import { openai } from './openai.js';
import type { ProviderId } from './types.js';

/** THE provider table: one adapter per vendor. */
const ADAPTERS: Partial<Record<ProviderId, ProviderAdapter>> = {
  openai,
  genvendor,
  genvendor_vertex: genvendorVertex,
  cloudy,
  cloudx,
  msgvendor,
};

export type OriginOverrides = Partial<Record<ProviderId, string>>;

/**
 * The providers this deployment serves, with their origin overrides applied
 * (GW_UPSTREAM_<PROVIDER> replaces the origin for every location of that
 * provider; path and query stay the vendor's own).
 */
export class Providers {
  constructor(private readonly overrides: OriginOverrides) {}

  get(id: ProviderId): ProviderAdapter {
    const adapter = ADAPTERS[id];
    if (!adapter) throw new Error(`provider ${id} is not in the provider table`);
    return adapter;
  }

  ids(): ProviderId[] {
    return Object.keys(ADAPTERS) as ProviderId[];
  }

  origin(id: ProviderId, loc: Location = {}): string {
    return this.overrides[id] ?? this.get(id).publicOrigin(loc);
  }

  /** where a call goes when nothing names a location, or undefined when that takes one (an Azure resource) */
  defaultOrigin(id: ProviderId): string | undefined {
    try {
      return this.origin(id, this.get(id).defaultLocation ?? {});
    } catch {
      return undefined;
    }
  }

  isOverridden(id: ProviderId): boolean {
    return this.overrides[id] !== undefined;
  }
}
