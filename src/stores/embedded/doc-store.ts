import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { COLLECTIONS, Mirror, type Collection, type DocStore } from '../types.js';

const FILE = 'state.json';

/**
 * In-process store. With a data directory every write is persisted as one JSON
 * file, written to a temporary file, fsynced and renamed over the old one, so
 * a crash mid-write leaves the previous state whole. Concurrent writes share a
 * flush.
 */
export class EmbeddedDocStore extends Mirror implements DocStore {
  private flushing: Promise<void> | undefined;
  private dirty = false;

  constructor(private readonly dir?: string) {
    super();
  }

  async start(): Promise<void> {
    if (!this.dir) return;
    await mkdir(this.dir, { recursive: true });
    let text: string;
    try {
      text = await readFile(join(this.dir, FILE), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    const parsed = JSON.parse(text) as Record<string, Record<string, unknown>>;
    for (const c of COLLECTIONS) {
      for (const [id, doc] of Object.entries(parsed[c] ?? {})) this.data.get(c)?.set(id, doc);
    }
  }

  async put(collection: Collection, id: string, doc: unknown): Promise<void> {
    this.apply(collection, id, structuredClone(doc));
    await this.persist();
  }

  async delete(collection: Collection, id: string): Promise<boolean> {
    const existed = this.data.get(collection)?.has(id) ?? false;
    if (!existed) return false;
    this.apply(collection, id, undefined);
    await this.persist();
    return true;
  }

  async close(): Promise<void> {
    await this.flushing;
  }

  private async persist(): Promise<void> {
    if (!this.dir) return;
    this.dirty = true;
    // a flush already under way may have serialized before this write: wait, then flush again
    while (this.dirty) {
      if (this.flushing) {
        await this.flushing;
        continue;
      }
      this.dirty = false;
      this.flushing = this.writeFile().finally(() => (this.flushing = undefined));
      await this.flushing;
    }
  }

  private async writeFile(): Promise<void> {
    const dir = this.dir as string;
    const snapshot: Record<string, Record<string, unknown>> = {};
    for (const c of COLLECTIONS) snapshot[c] = Object.fromEntries(this.data.get(c) ?? []);
    const tmp = join(dir, `${FILE}.${process.pid}.tmp`);
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
}
