import { mkdir, open, readdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GatewayError } from '../../errors.js';
import { COLLECTIONS, Mirror, writeDeadline, type Collection, type DocStore, type DocWrite, type StoreLog, type WriteOptions } from '../types.js';

const FILE = 'state.json';
const LOCK = 'state.lock';
const TMP_PREFIX = `${FILE}.`;
const TMP_SUFFIX = '.tmp';

/**
 * In-process store. With a data directory every write is persisted as one JSON
 * file, written to a temporary file, fsynced and renamed over the old one (then
 * the directory fsynced), so a crash mid-write leaves the previous state whole.
 * Writes that arrive while a flush runs share the next one.
 */
export class EmbeddedDocStore extends Mirror implements DocStore {
  /** bumped by every change; a write is durable once `flushedSeq` reaches its number */
  private changeSeq = 0;
  private flushedSeq = 0;
  private flushing: Promise<void> | undefined;
  /** collections in the file this version does not know (written by a newer one): carried over untouched */
  private foreign: Record<string, unknown> = {};

  constructor(
    private readonly dir?: string,
    log?: StoreLog,
  ) {
    super(log);
  }

  async start(): Promise<void> {
    if (!this.dir) return;
    await mkdir(this.dir, { recursive: true });
    await this.lock();
    try {
      await this.removeStaleTempFiles();
      await this.load();
    } catch (err) {
      await this.unlock();
      throw err;
    }
  }

  private async load(): Promise<void> {
    const dir = this.dir as string;
    const path = join(dir, FILE);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw new Error(`GW_DATA_DIR: cannot read ${path}: ${(err as Error).message}`, { cause: err });
    }
    const { known, foreign } = parseState(text, path);
    this.foreign = foreign;
    for (const [c, docs] of Object.entries(known)) {
      for (const [id, doc] of Object.entries(docs)) this.apply(c as Collection, id, doc);
    }
  }

  async put(collection: Collection, id: string, doc: object, options: WriteOptions = {}): Promise<void> {
    await this.change([{ collection, id, doc: structuredClone(doc) }], options);
  }

  /** Applied together in this event-loop turn, persisted by one flush, undone together when that flush fails or ends past the deadline. */
  async putAll(writes: readonly DocWrite[], options: WriteOptions = {}): Promise<void> {
    await this.change(
      writes.map((w) => ({ collection: w.collection, id: w.id, doc: structuredClone(w.doc) })),
      options,
    );
  }

  async create<T extends object>(collection: Collection, id: string, doc: T, options: WriteOptions = {}): Promise<{ created: boolean; current: T }> {
    const existing = this.get<T>(collection, id);
    if (existing !== undefined) return { created: false, current: existing };
    await this.change([{ collection, id, doc: structuredClone(doc) }], options);
    return { created: true, current: this.get<T>(collection, id) ?? doc };
  }

  async delete(collection: Collection, id: string, options: WriteOptions = {}): Promise<boolean> {
    if (!this.has(collection, id)) return false;
    await this.change([{ collection, id, doc: undefined }], options);
    return true;
  }

  async close(): Promise<void> {
    await this.flushing?.catch(() => undefined);
    await this.unlock();
  }

  /**
   * One process per data directory: a second gateway on the same directory
   * would overwrite the first one's file with its own view. A lock left by a
   * process that no longer runs is taken over.
   */
  private async lock(): Promise<void> {
    const path = join(this.dir as string, LOCK);
    for (;;) {
      try {
        await writeFile(path, String(process.pid), { flag: 'wx', mode: 0o600 });
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new Error(`GW_DATA_DIR: cannot lock ${path}: ${(err as Error).message}`, { cause: err });
      }
      const holder = Number((await readFile(path, 'utf8').catch(() => '')).trim());
      // this very process (another store in tests, or a restart in place) may take it
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isRunning(holder)) {
        throw new Error(`GW_DATA_DIR: ${this.dir} is in use by process ${holder} (${path}); one gateway per data directory`);
      }
      await unlink(path).catch(() => undefined);
    }
  }

  private async unlock(): Promise<void> {
    if (!this.dir) return;
    const path = join(this.dir, LOCK);
    const holder = await readFile(path, 'utf8').catch(() => '');
    if (holder.trim() === String(process.pid)) await unlink(path).catch(() => undefined);
  }

  /**
   * Applies changes and waits until they are on disk. When the flush fails,
   * or has not ended by the deadline, each change is undone (unless something
   * newer replaced it) and the caller gets the error: an acknowledged write is
   * a persisted one, and a rejected one does not stand. The undo of a late
   * flush is itself flushed, so the file follows.
   */
  private async change(changes: ReadonlyArray<{ collection: Collection; id: string; doc: unknown }>, options: WriteOptions): Promise<void> {
    const deadline = writeDeadline(options);
    if (Date.now() > deadline) throw new GatewayError('store_timeout', 'the write reached the store past its deadline; nothing was written');
    const previous = changes.map((c) => this.get(c.collection, c.id));
    for (const c of changes) this.apply(c.collection, c.id, c.doc);
    if (!this.dir) return;
    const applied = changes.map((c) => this.get(c.collection, c.id));
    const undo = () =>
      changes.forEach((c, i) => {
        if (this.get(c.collection, c.id) === applied[i]) this.apply(c.collection, c.id, previous[i]);
      });
    const what = changes.map((c) => `${c.collection}/${c.id}`).join(', ');
    const flushed = this.flushThrough(++this.changeSeq);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), Math.max(0, deadline - Date.now()))));
    try {
      if ((await Promise.race([flushed, late])) !== 'late') return;
    } catch (err) {
      undo();
      throw new Error(`GW_DATA_DIR: cannot persist ${what}: ${(err as Error).message}`, { cause: err });
    } finally {
      clearTimeout(timer);
    }
    undo();
    flushed.catch(() => undefined);
    this.flushThrough(++this.changeSeq).catch((err: unknown) => this.log.error({ err, changes: what }, 'GW_DATA_DIR: cannot persist the undo of a write past its deadline'));
    throw new GatewayError('store_timeout', `GW_DATA_DIR: ${what} not persisted by the write deadline; undone`);
  }

  private async flushThrough(seq: number): Promise<void> {
    while (this.flushedSeq < seq) {
      if (this.flushing) {
        await this.flushing.catch(() => undefined);
        continue;
      }
      const upTo = this.changeSeq;
      this.flushing = this.writeFile().finally(() => (this.flushing = undefined));
      await this.flushing;
      this.flushedSeq = Math.max(this.flushedSeq, upTo);
    }
  }

  private async writeFile(): Promise<void> {
    const dir = this.dir as string;
    const snapshot: Record<string, unknown> = { ...this.foreign };
    for (const c of COLLECTIONS) snapshot[c] = Object.fromEntries(this.data.get(c) ?? []);
    const tmp = join(dir, `${TMP_PREFIX}${process.pid}${TMP_SUFFIX}`);
    const fh = await open(tmp, 'w', 0o600);
    try {
      await fh.writeFile(JSON.stringify(snapshot));
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, join(dir, FILE));
    const dh = await open(dir, 'r');
    try {
      await dh.sync();
    } finally {
      await dh.close();
    }
  }

  /** leftovers of a write interrupted by a crash: never read, removed so they do not pile up */
  private async removeStaleTempFiles(): Promise<void> {
    const dir = this.dir as string;
    for (const name of await readdir(dir)) {
      if (name.startsWith(TMP_PREFIX) && name.endsWith(TMP_SUFFIX)) await unlink(join(dir, name)).catch(() => undefined);
    }
  }
}

/** A state file that does not parse is a start-up error: starting empty would silently drop every tenant. */
function parseState(text: string, path: string): { known: Record<string, Record<string, unknown>>; foreign: Record<string, unknown> } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new Error(`GW_DATA_DIR: ${path} is not valid JSON (${(err as Error).message}); restore it from a backup or move it away to start empty`, { cause: err });
  }
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(parsed)) throw new Error(`GW_DATA_DIR: ${path} must hold a JSON object of collections`);
  const known: Record<string, Record<string, unknown>> = {};
  const foreign: Record<string, unknown> = {};
  for (const [c, docs] of Object.entries(parsed)) {
    if (!COLLECTIONS.includes(c as Collection)) foreign[c] = docs;
    else if (!isObject(docs)) throw new Error(`GW_DATA_DIR: ${path}: collection ${c} must be a JSON object of documents`);
    else known[c] = docs;
  }
  return { known, foreign };
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it runs, under another user
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
