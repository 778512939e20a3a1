import { GatewayError } from '../errors.js';
import type { StageClock } from '../http/stages.js';
import type { Location, StoredCredentialRule } from '../providers/adapter.js';
import type { ProviderCredential } from '../providers/types.js';
import { cloudxEndpoint } from '../providers/cloudx.js';
import { DEFAULT_AWS_REGION, isAwsRegion } from '../providers/cloudy.js';
import { vertexTarget } from '../providers/genvendor-vertex.js';
import type { ProviderId } from '../providers/types.js';
import type { Collection, DocStore } from '../stores/types.js';
import type { Logger } from '../telemetry/log.js';
import type { Keyring, Sealed } from './crypto.js';
import { withinStoreBound } from './store-timeout.js';

/** A key's place among the provider's keys, as dispatch reads it; shown only when set. */
interface DispatchFields {
  /** names one more key of the provider (absent: the provider's unnamed key, which storing again replaces) */
  name?: string;
  /** merit order: the lower first (a price or a priority); absent counts as 0 */
  merit?: number;
  /** tried only when every other key of the provider failed or is cooling down */
  last_resort?: boolean;
  /** calls in flight through this key on one replica, past which it is skipped */
  max_inflight?: number;
}

/** What a caller may store for one provider (docs/api.md, Stored provider keys). */
export interface VendorKeyInput extends DispatchFields {
  provider: ProviderId;
  api_key: string;
  credential_kind?: string;
  endpoint?: string;
  region?: string;
  project?: string;
  location?: string;
}

/** A stored key as any route may show it: never the secret, only its last 4 characters. */
export interface VendorKeySummary extends DispatchFields {
  provider: ProviderId;
  credential_kind: string;
  key_hint: string;
}

interface VendorKeyDoc extends VendorKeySummary {
  org_id: string;
  location: Location;
  sealed: Sealed;
  updated_at: string;
}

/** A provider key stored for an org, decrypted, with where it points. */
export interface StoredCredential {
  credential: ProviderCredential;
  location: Location;
  /**
   * Set only when the org stores several keys for the provider: each is a
   * destination of the call, tried in merit order (the fields above are the
   * first of them). Absent, the call has one destination: the fast path.
   */
  destinations?: readonly StoredDestination[];
}

/** One of several stored keys of a provider, as merit-order dispatch tries it. */
export interface StoredDestination {
  /** `<provider>` for the unnamed key, `<provider>/<name>` for a named one: unique within the org */
  id: string;
  credential: ProviderCredential;
  location: Location;
  merit: number;
  lastResort: boolean;
  maxInflight: number | undefined;
}

/** Stored provider keys as the pipeline's dispatch reads them. */
export interface StoredKeys {
  /** may wait on the store; bounded by GW_BYOK_STORE_TIMEOUT_S inside, a timeout naming the running stage from `stages` */
  find(orgId: string, provider: ProviderId, stages: StageClock): Promise<StoredCredential | undefined> | StoredCredential | undefined;
}

export interface DocReader {
  read(collection: Collection, id: string): Promise<unknown>;
}

/** with GW_UPSTREAM_CLOUDX set every resource goes to the override, so any origin-shaped endpoint is kept */
const ANY_ORIGIN = /^https?:\/\/[^/?#\s]+\/?$/;

/** the unnamed key's document id, and the id of the provider's group of keys (org ids and names hold no `:`) */
const groupId = (orgId: string, provider: ProviderId) => `${orgId}:${provider}`;
const docId = (orgId: string, provider: ProviderId, name: string | undefined) => (name === undefined ? groupId(orgId, provider) : `${groupId(orgId, provider)}:${name}`);
const groupOf = (id: string): string => id.split(':', 2).join(':');
/** bound into the ciphertext: a record moved to another org, provider or name does not open */
const sealContext = (orgId: string, provider: ProviderId, name: string | undefined) => `vendor_key:${docId(orgId, provider, name)}`;
const destinationId = (provider: ProviderId, name: string | undefined) => (name === undefined ? provider : `${provider}/${name}`);
/** a provider whose only key is the unnamed one */
const NO_NAMES: ReadonlySet<string> = new Set();
const badField = (field: string, message: string) => new GatewayError('request_error', `${field}: ${message}`, { fields: { field } });

export interface VendorKeysOptions {
  /** GW_BYOK_STORE_TIMEOUT_S in ms: the bound on every store call on a request's path */
  timeoutMs: number;
  /** set with Redis: where a mirror miss is checked before it is believed */
  reader?: DocReader;
  /** GW_UPSTREAM_CLOUDX is set: the endpoint allowlist does not apply */
  cloudxOverridden: boolean;
  /** each provider's rule for what it takes (the provider table's) */
  rules: (provider: ProviderId) => StoredCredentialRule;
  log: Logger;
}

/**
 * Provider keys stored per org, sealed at rest (AES-256-GCM, key id per
 * record). Requests read them through an in-memory cache of opened
 * credentials per org and provider, dropped on every change from any
 * replica, so a secret is decrypted once, not per request. An org may store
 * named keys beside the unnamed one; a provider with several keys opens as
 * one credential carrying all of them as destinations.
 */
export class VendorKeys implements StoredKeys {
  /** opened credentials by group (org and provider); null = known to be absent */
  private readonly opened = new Map<string, StoredCredential | null>();
  /** bumped on every change, so a lookup that raced a write does not cache a stale answer */
  private readonly generation = new Map<string, number>();
  private readonly pending = new Map<string, Promise<StoredCredential | undefined>>();
  /** the named keys' document ids by group, kept from the mirror */
  private readonly named = new Map<string, Set<string>>();

  constructor(
    private readonly store: DocStore,
    private readonly keyring: Keyring,
    private readonly opts: VendorKeysOptions,
  ) {
    for (const d of store.values<VendorKeyDoc>('vendor_keys')) if (d.name !== undefined) this.indexNamed(docId(d.org_id, d.provider, d.name));
    store.onChange((collection, id) => {
      if (collection !== 'vendor_keys') return;
      const group = groupOf(id);
      if (id !== group) this.indexNamed(id);
      this.opened.delete(group);
      this.generation.set(group, (this.generation.get(group) ?? 0) + 1);
    });
  }

  private indexNamed(id: string): void {
    const group = groupOf(id);
    const ids = this.named.get(group) ?? new Set<string>();
    if (this.store.get('vendor_keys', id) === undefined) ids.delete(id);
    else ids.add(id);
    if (ids.size === 0) this.named.delete(group);
    else this.named.set(group, ids);
  }

  /** Reseals records still under a previous key (GW_SECRETS_KEY_PREVIOUS); safe on several replicas at once. */
  async start(): Promise<void> {
    let resealed = 0;
    for (const doc of [...this.store.values<VendorKeyDoc>('vendor_keys')]) {
      if (doc.sealed.kid === this.keyring.currentId) continue;
      if (!this.keyring.canOpen(doc.sealed)) {
        this.opts.log.warn({ org_id: doc.org_id, provider: doc.provider, kid: doc.sealed.kid }, 'stored provider key sealed under a key that is not configured');
        continue;
      }
      const context = sealContext(doc.org_id, doc.provider, doc.name);
      const sealed = this.keyring.seal(this.keyring.open(doc.sealed, context), context);
      await this.store.put('vendor_keys', docId(doc.org_id, doc.provider, doc.name), { ...doc, sealed });
      resealed++;
    }
    if (resealed > 0) this.opts.log.info({ resealed, kid: this.keyring.currentId }, 'stored provider keys resealed under the current key');
  }

  find(orgId: string, provider: ProviderId, stages: StageClock): Promise<StoredCredential | undefined> | StoredCredential | undefined {
    const id = groupId(orgId, provider);
    const known = this.opened.get(id);
    if (known !== undefined) return known ?? undefined;
    const doc = this.store.get<VendorKeyDoc>('vendor_keys', id);
    const named = this.named.get(id);
    if (doc || named || !this.opts.reader) return this.remember(id, this.generation.get(id), this.openGroup(doc, named));
    let lookup = this.pending.get(id);
    if (!lookup) {
      lookup = this.findInStore(id, this.opts.reader, stages).finally(() => this.pending.delete(id));
      this.pending.set(id, lookup);
    }
    return lookup;
  }

  list(orgId: string): VendorKeySummary[] {
    const out: VendorKeySummary[] = [];
    for (const d of this.store.values<VendorKeyDoc>('vendor_keys')) {
      if (d.org_id === orgId) out.push(summaryOf(d));
    }
    return out.sort((a, b) => a.provider.localeCompare(b.provider) || (a.name ?? '').localeCompare(b.name ?? ''));
  }

  /** Validates, seals and stores; writing the same key again is harmless. */
  async create(orgId: string, input: VendorKeyInput, stages: StageClock): Promise<VendorKeySummary> {
    const rule = this.opts.rules(input.provider);
    const kindNames = Object.keys(rule.kinds);
    const credential_kind = input.credential_kind ?? (kindNames[0] as string);
    const kind = rule.kinds[credential_kind];
    if (!kind) throw badField('credential_kind', `${input.provider} takes ${kindNames.join(' or ')}`);
    if (!kind.secret.test(input.api_key)) throw badField('api_key', `must be ${kind.shape}`);
    const location = this.location(input, rule);
    const { name, merit, last_resort, max_inflight } = input;
    const summary: VendorKeySummary = summaryOf({ provider: input.provider, credential_kind, key_hint: input.api_key.slice(-4), name, merit, last_resort, max_inflight });
    const doc: VendorKeyDoc = {
      ...summary,
      org_id: orgId,
      location,
      sealed: this.keyring.seal(input.api_key, sealContext(orgId, input.provider, name)),
      updated_at: new Date().toISOString(),
    };
    // the store gets the same deadline, so a write delayed past the 504 is not applied later
    const write = this.store.putAll([{ collection: 'vendor_keys', id: docId(orgId, input.provider, name), doc }], { deadline: Date.now() + this.opts.timeoutMs });
    await withinStoreBound(write, this.opts.timeoutMs, stages, 'storing the provider key');
    this.opts.log.info({ org_id: orgId, provider: input.provider, name, credential_kind, kid: doc.sealed.kid }, 'provider key stored');
    return summary;
  }

  /** `name` removes that named key; without it, the provider's unnamed key */
  async remove(orgId: string, provider: ProviderId, stages: StageClock, name?: string): Promise<boolean> {
    const removal = this.store.delete('vendor_keys', docId(orgId, provider, name), { deadline: Date.now() + this.opts.timeoutMs });
    const removed = await withinStoreBound(removal, this.opts.timeoutMs, stages, 'deleting the provider key');
    if (removed) this.opts.log.info({ org_id: orgId, provider, name }, 'provider key deleted');
    return removed;
  }

  private location(input: VendorKeyInput, rule: StoredCredentialRule): Location {
    for (const field of ['endpoint', 'region', 'project', 'location'] as const) {
      if (input[field] !== undefined && !rule.location.includes(field)) throw badField(field, `not used by ${input.provider}`);
    }
    const loc: Location = {};
    if (rule.location.includes('endpoint')) {
      if (input.endpoint !== undefined) loc.endpoint = this.endpoint(input.endpoint);
      else if (!this.opts.cloudxOverridden) throw badField('endpoint', `required for ${input.provider}`);
    }
    if (rule.location.includes('region')) {
      const region = input.region ?? DEFAULT_AWS_REGION;
      if (!isAwsRegion(region)) throw badField('region', 'must be a region name such as us-east-1');
      loc.region = region;
    }
    if (rule.location.includes('project')) {
      // the same checks a caller's x-gw-vertex-* headers pass, named after this body's fields
      try {
        vertexTarget({ project: input.project, location: input.location });
      } catch (err) {
        const field = input.project === undefined || !(err instanceof GatewayError) || err.options.fields?.['field'] === 'x-gw-vertex-project' ? 'project' : 'location';
        throw badField(field, field === 'project' ? 'a Vertex project id is required' : 'must be a location such as us-central1 or global');
      }
      loc.project = input.project;
      if (input.location !== undefined) loc.location = input.location;
    }
    return loc;
  }

  /** the Azure endpoint allowlist (the one caller headers pass), unless GW_UPSTREAM_CLOUDX replaces every resource */
  private endpoint(value: string): string {
    if (this.opts.cloudxOverridden) {
      if (!ANY_ORIGIN.test(value)) throw badField('endpoint', 'must be an origin such as https://myresource.openai.azure.com');
      return value.toLowerCase().replace(/\/$/, '');
    }
    try {
      return cloudxEndpoint(value);
    } catch {
      throw badField('endpoint', 'must be https://<resource>.openai.azure.com or https://<resource>.cognitiveservices.azure.com');
    }
  }

  private openDoc(doc: VendorKeyDoc): StoredCredential {
    const kind = this.opts.rules(doc.provider).kinds[doc.credential_kind];
    let secret: string;
    try {
      if (!kind) throw new Error(`unknown credential_kind ${doc.credential_kind}`);
      secret = this.keyring.open(doc.sealed, sealContext(doc.org_id, doc.provider, doc.name));
    } catch (err) {
      this.opts.log.warn({ org_id: doc.org_id, provider: doc.provider, kid: doc.sealed.kid, reason: (err as Error).message }, 'stored provider key cannot be opened');
      throw new GatewayError('onboarding_incomplete', `the stored ${doc.provider} key cannot be opened with this deployment's GW_SECRETS_KEY; store it again`);
    }
    return { credential: { secret, scheme: kind.scheme, source: 'stored' }, location: doc.location };
  }

  /**
   * The unnamed key and the named ones of one provider: one key without a
   * concurrency limit opens as itself; several, or one with a max_inflight
   * (which only dispatch over destinations holds it to), as one credential
   * carrying each as a destination.
   */
  private openGroup(unnamed: VendorKeyDoc | undefined, namedIds: ReadonlySet<string> = NO_NAMES): StoredCredential | undefined {
    const docs: VendorKeyDoc[] = unnamed ? [unnamed] : [];
    for (const id of namedIds) {
      const d = this.store.get<VendorKeyDoc>('vendor_keys', id);
      if (d) docs.push(d);
    }
    if (docs.length === 0) return undefined;
    if (docs.length === 1 && docs[0]!.max_inflight === undefined) return this.openDoc(docs[0]!);
    const destinations = docs.map((d): StoredDestination => {
      const { credential, location } = this.openDoc(d);
      return { id: destinationId(d.provider, d.name), credential, location, merit: d.merit ?? 0, lastResort: d.last_resort === true, maxInflight: d.max_inflight };
    });
    const first = destinations.reduce((a, b) => (b.merit < a.merit ? b : a));
    return { credential: first.credential, location: first.location, destinations };
  }

  /** A mirror miss: the key may have been stored through another replica a moment ago, so ask the store (bounded). */
  private async findInStore(id: string, reader: DocReader, stages: StageClock): Promise<StoredCredential | undefined> {
    const generation = this.generation.get(id);
    const read = reader.read('vendor_keys', id).catch((err: unknown) => {
      throw new GatewayError('store_timeout', 'stored provider key lookup: the store is unavailable', { cause: err, headers: [['x-gw-stage-durations', stages.header()]] });
    });
    const doc = (await withinStoreBound(read, this.opts.timeoutMs, stages, 'stored provider key lookup')) as VendorKeyDoc | undefined;
    return this.remember(id, generation, this.openGroup(doc));
  }

  private remember(id: string, generation: number | undefined, found: StoredCredential | undefined): StoredCredential | undefined {
    if (this.generation.get(id) === generation) this.opened.set(id, found ?? null);
    return found;
  }
}

/** what a route shows of a key: the dispatch fields only where they were set, so a key stored without them shows as before */
function summaryOf(d: VendorKeySummary): VendorKeySummary {
  const out: VendorKeySummary = { provider: d.provider, credential_kind: d.credential_kind, key_hint: d.key_hint };
  if (d.name !== undefined) out.name = d.name;
  if (d.merit !== undefined) out.merit = d.merit;
  if (d.last_resort !== undefined) out.last_resort = d.last_resort;
  if (d.max_inflight !== undefined) out.max_inflight = d.max_inflight;
  return out;
}
