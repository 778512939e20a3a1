/**
 * Configuration state (orgs, developer keys, stored provider keys, skills,
 * caps, access lists, transitions) lives in named collections of JSON
 * documents. Every replica keeps a full in-process mirror, so hot-path reads
 * are synchronous and never wait on Redis; writes go to the backing store and
 * every replica's mirror is updated through change notifications.
 */
export type Collection = 'orgs' | 'dev_keys' | 'vendor_keys' | 'key_skills' | 'org_policy' | 'transitions';

export const COLLECTIONS: readonly Collection[] = ['orgs', 'dev_keys', 'vendor_keys', 'key_skills', 'org_policy', 'transitions'];

export type ChangeListener = (collection: Collection, id: string) => void;

export interface DocStore {
  /** loads the mirror and starts following changes */
  start(): Promise<void>;
  get<T>(collection: Collection, id: string): T | undefined;
  values<T>(collection: Collection): IterableIterator<T>;
  /** resolves once the write is durable and visible to this replica */
  put(collection: Collection, id: string, doc: unknown): Promise<void>;
  delete(collection: Collection, id: string): Promise<boolean>;
  /** called for every change, local or from another replica, after the mirror is updated */
  onChange(listener: ChangeListener): void;
  close(): Promise<void>;
}

/** Shared base: the mirror and listener plumbing both implementations use. */
export class Mirror {
  protected readonly data = new Map<Collection, Map<string, unknown>>(COLLECTIONS.map((c) => [c, new Map()]));
  private readonly listeners: ChangeListener[] = [];

  get<T>(collection: Collection, id: string): T | undefined {
    return this.data.get(collection)?.get(id) as T | undefined;
  }

  values<T>(collection: Collection): IterableIterator<T> {
    return (this.data.get(collection) ?? new Map<string, unknown>()).values() as IterableIterator<T>;
  }

  onChange(listener: ChangeListener): void {
    this.listeners.push(listener);
  }

  /** sets (or with `undefined`, removes) a document in the mirror and notifies */
  protected apply(collection: Collection, id: string, doc: unknown): void {
    const map = this.data.get(collection);
    if (!map) return;
    if (doc === undefined) map.delete(id);
    else map.set(id, doc);
    for (const l of this.listeners) l(collection, id);
  }
}
