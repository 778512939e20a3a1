/**
 * Configuration state (orgs, developer keys, stored provider keys, skills,
 * caps, access lists, transitions) lives in named collections of JSON
 * documents. Every replica keeps a full in-process mirror, so hot-path reads
 * are synchronous and never wait on Redis; writes go to the backing store and
 * every replica's mirror is updated through change notifications.
 *
 * Documents in the mirror are deeply frozen: a reader that wants to change one
 * copies it and writes the copy back with `put`.
 */
export type Collection = 'orgs' | 'dev_keys' | 'vendor_keys' | 'key_skills' | 'org_policy' | 'transitions';

/** Adding a collection is one entry here (and in the union above); both stores pick it up. */
export const COLLECTIONS: readonly Collection[] = ['orgs', 'dev_keys', 'vendor_keys', 'key_skills', 'org_policy', 'transitions'];

export type ChangeListener = (collection: Collection, id: string) => void;

/** One document of a multi-document write. */
export interface DocWrite {
  collection: Collection;
  id: string;
  doc: object;
}

export interface WriteOptions {
  /**
   * This host's wall-clock time (ms) past which the write must not be
   * applied: a write that reaches the store later is dropped and the call
   * rejects with store_timeout. It lets a caller that gave up at the deadline
   * (and answered 504) count on the write not landing afterwards; see
   * `putAll` for what remains. Without one, the store's own bound
   * (STORE_WRITE_BOUND_MS) is the deadline: a write never outlives the call
   * that rejected.
   */
  deadline?: number;
}

/** The bound on every write that names no earlier deadline; past it the write rejects with store_timeout and is not applied later. */
export const STORE_WRITE_BOUND_MS = 5000;

/** The deadline a write runs under: the caller's, never later than the store's own bound from now. */
export const writeDeadline = (options: WriteOptions): number => Math.min(options.deadline ?? Infinity, Date.now() + STORE_WRITE_BOUND_MS);

export interface DocStore {
  /** loads the mirror and starts following changes; rejects with a message naming the cause */
  start(): Promise<void>;
  get<T>(collection: Collection, id: string): T | undefined;
  values<T>(collection: Collection): IterableIterator<T>;
  /**
   * Resolves once the write is durable and visible to this replica (and, with
   * Redis, delivered to every replica). Every write (put, putAll, create,
   * delete) takes its deadline the same way: see `putAll`.
   */
  put(collection: Collection, id: string, doc: object, options?: WriteOptions): Promise<void>;
  /**
   * Writes several documents atomically: every replica and the backing store
   * hold all of them or none (Redis: one Lua script; embedded: one flush).
   * With a deadline, Redis checks it on its own clock as the script runs, so
   * a script delayed in transit and run late writes nothing. What no store can
   * rule out: a write applied just before the deadline whose acknowledgement
   * arrives after it; then all the documents stand, never some. Embedded
   * applies at once and undoes the write when its flush has not ended by the
   * deadline (a crash between that flush and the next one keeps it, whole).
   */
  putAll(writes: readonly DocWrite[], options?: WriteOptions): Promise<void>;
  /**
   * Writes only when no document has that id, atomically across replicas.
   * `current` is what the store holds afterwards: `doc` when created, else
   * the document that was there (read from the backing store, not the mirror).
   */
  create<T extends object>(collection: Collection, id: string, doc: T, options?: WriteOptions): Promise<{ created: boolean; current: T }>;
  delete(collection: Collection, id: string, options?: WriteOptions): Promise<boolean>;
  /** called for every change, local or from another replica, after the mirror is updated */
  onChange(listener: ChangeListener): void;
  close(): Promise<void>;
}

/** Where a store reports what it cannot throw to a caller (a listener's bug, a lost connection). */
export interface StoreLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

const SILENT_STORE_LOG: StoreLog = { warn: () => undefined, error: () => undefined };

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** Shared base: the mirror and listener plumbing both implementations use. */
export class Mirror {
  protected readonly data = new Map<Collection, Map<string, unknown>>(COLLECTIONS.map((c) => [c, new Map()]));
  private readonly listeners: ChangeListener[] = [];

  constructor(protected readonly log: StoreLog = SILENT_STORE_LOG) {}

  get<T>(collection: Collection, id: string): T | undefined {
    return this.data.get(collection)?.get(id) as T | undefined;
  }

  values<T>(collection: Collection): IterableIterator<T> {
    return (this.data.get(collection) ?? new Map<string, unknown>()).values() as IterableIterator<T>;
  }

  onChange(listener: ChangeListener): void {
    this.listeners.push(listener);
  }

  protected has(collection: Collection, id: string): boolean {
    return this.data.get(collection)?.has(id) ?? false;
  }

  /** sets (or with `undefined`, removes) a document in the mirror and notifies */
  protected apply(collection: Collection, id: string, doc: unknown): void {
    const map = this.data.get(collection);
    if (!map) return;
    if (doc === undefined) map.delete(id);
    else map.set(id, deepFreeze(doc));
    for (const l of this.listeners) {
      // one faulty listener must not leave the others (or the store) behind
      try {
        l(collection, id);
      } catch (err) {
        this.log.error({ err, collection, id }, 'store change listener failed');
      }
    }
  }
}
