import { randomUUID } from 'node:crypto';
import { GatewayError } from '../../errors.js';
import { COLLECTIONS, Mirror, STORE_WRITE_BOUND_MS, writeDeadline, type Collection, type DocStore, type DocWrite, type StoreLog, type WriteOptions } from '../types.js';
import { describeTarget, redisClient, replicaHolds, settingOf, timeAt, type RedisClient, type RedisTarget } from './client.js';
import { DOC_PUT_ALL_SCRIPT, DOC_SCRIPTS, OTHER_GENERATION_REPLY, PAST_DEADLINE_REPLY, RELEASE_LEASE_SCRIPT, RESTORE_SCRIPT, type DocScript } from './doc-scripts.js';
import { redisSubscriber, type Subscriber } from './subscriber.js';
import { originOf, WriteConfirmations } from './write-confirmations.js';
import { throttledWarn } from '../../telemetry/throttled-log.js';
import type { RedisKeys } from './prefixes.js';

/** How long a writer waits for its own change to come back through pub/sub. */
const ECHO_WAIT_MS = 1000;
/** Bound on one store command; past it a write answers 504 store_timeout (and, carrying a deadline no later, is not applied afterwards). */
const COMMAND_TIMEOUT_MS = STORE_WRITE_BOUND_MS;
const CONNECT_TIMEOUT_MS = 5000;
const RESYNC_RETRY_MS = 1000;
/** How often a replica checks the generation marker: Redis can lose its data (FLUSHALL, a failover to an empty replica) without dropping a connection. */
const GENERATION_CHECK_MS = 1000;
/** Long enough to write every document back; a replica that dies meanwhile leaves the restore to another once it lapses. */
const RESTORE_LEASE_MS = 30_000;
/** On a cluster, how long a write waits for a replica to confirm it has it (client.ts, replicaHolds). */
const REPLICA_WAIT_MS = 1000;

/** A write script's reply: `[1, subscribers reached]` when it wrote, else what doc-scripts.ts says. */
type ScriptReply = [1, number] | number | string;

type ScriptedRedis = RedisClient &
  Record<DocScript, (hash: string, channel: string, marker: string, id: string, doc: string, message: string, deadline: string, generation: string) => Promise<ScriptReply>> & {
    gwDocPutAll(numKeys: number, ...keysThenArgs: string[]): Promise<ScriptReply>;
    gwReleaseLease(lease: string, holder: string): Promise<number>;
    gwRestore(numKeys: number, ...keysThenArgs: string[]): Promise<number>;
  };

/** What the store reports beyond its log. */
export interface RedisDocStoreHooks {
  /** Redis lost the documents (or was replaced by an empty store); called once per incident */
  onDataLoss?: () => void;
}

/** Redis as one reload read it: every collection's documents and the generation marker. */
interface Snapshot {
  docs: Array<Record<string, string>>;
  generation: string | null;
  empty: boolean;
}

/** A restore another replica holds the lease for (or that lost a race): retried quietly until Redis is whole again. */
class RestorePending extends Error {}

/** One change as this store writes and publishes it; `text` undefined deletes. */
interface Change {
  op: 'p' | 'd';
  collection: Collection;
  id: string;
  text: string | undefined;
}

/** A change as published: [op, collection, id, writer token, document or null]. */
type ChangeMessage = ['p' | 'd', string, string, string, unknown];
/** Published by a replica that wrote its mirror back into Redis: [op, its origin]; every other replica reloads. */
const RESTORED = 'r';
type RestoredMessage = [typeof RESTORED, string];

/**
 * Redis-backed store: one hash per collection, one pub/sub channel announcing
 * every change with the document inline. Writes change the hash and publish in
 * one Lua script, so the channel carries the writes in their Redis order; every
 * replica, the writer included, applies the messages in turn. A writer returns
 * once its own message came back: Redis has then delivered it to every
 * subscribed replica. After a reconnect of the subscriber (messages sent
 * meanwhile are lost) a replica reloads everything. Every key shares one hash
 * tag, so on a Redis Cluster the whole store is one slot's, its scripts and
 * transactions run there, and a write is acknowledged once a replica of that
 * slot's master has it too (a failover does not take it away).
 */
export class RedisDocStore extends Mirror implements DocStore {
  private readonly cmd: ScriptedRedis;
  private readonly sub: Subscriber;
  private readonly origin = randomUUID();
  private readonly confirmations = new WriteConfirmations(ECHO_WAIT_MS);
  /** where other replicas acknowledge applying this one's changes */
  private readonly ackChannel: string;
  private seq = 0;
  /** while a reload runs, messages wait here and are applied after the snapshot */
  private buffered: string[] | undefined;
  private resyncing: Promise<void> | undefined;
  private started = false;
  private closed = false;
  private lastError: Error | undefined;
  /** the generation of the data set the mirror follows (the marker's value); undefined until the first load */
  private generation: string | undefined;
  /** set from the moment a loss is seen until Redis holds the mirror again: one metric and one error line per incident */
  private lossSeen = false;
  private generationTimer: NodeJS.Timeout | undefined;
  private checkingGeneration = false;
  private readonly warnNotEchoed: (obj: object) => void;
  private readonly warnUnreplicated: (obj: object) => void;
  private readonly warnUnconfirmed: (obj: object) => void;

  constructor(
    private readonly target: RedisTarget,
    private readonly keys: RedisKeys,
    log?: StoreLog,
    private readonly hooks: RedisDocStoreHooks = {},
  ) {
    super(log);
    this.warnNotEchoed = throttledWarn(this.log, 'store change not echoed in time; applied locally');
    this.warnUnconfirmed = throttledWarn(this.log, 'configuration change not confirmed in time by every replica; one stopped or unreachable serves the old state until it reads the change');
    this.warnUnreplicated = throttledWarn(this.log, 'configuration write not confirmed by a replica in time; a failover of its master now could lose it');
    // connection names let an operator (and the tests) tell the store's connections apart in CLIENT LIST
    this.cmd = redisClient(target, { connectTimeout: CONNECT_TIMEOUT_MS, connectionName: `${keys.docChannel}:cmd`, maxRetriesPerRequest: 1, commandTimeout: COMMAND_TIMEOUT_MS }) as ScriptedRedis;
    for (const [name, lua] of Object.entries(DOC_SCRIPTS)) this.cmd.defineCommand(name, { numberOfKeys: 3, lua });
    this.cmd.defineCommand('gwDocPutAll', { lua: DOC_PUT_ALL_SCRIPT });
    this.cmd.defineCommand('gwReleaseLease', { numberOfKeys: 1, lua: RELEASE_LEASE_SCRIPT });
    this.cmd.defineCommand('gwRestore', { lua: RESTORE_SCRIPT });
    // resubscribing is ours to do: the reload must start only once the subscription is live again
    this.ackChannel = keys.docAcks(this.origin);
    this.sub = redisSubscriber(target, this.cmd, keys.docChannel, { connectTimeout: CONNECT_TIMEOUT_MS, connectionName: `${keys.docChannel}:sub` });
  }

  async start(): Promise<void> {
    this.watch(this.cmd, 'command');
    this.watch(this.sub, 'subscriber');
    this.sub.on('message', (channel: string, message: string) => (channel === this.ackChannel ? this.confirmations.acked(message) : this.onMessage(message)));
    this.sub.on('ready', () => {
      if (this.started && !this.closed) void this.resyncUntilDone();
    });
    try {
      // the subscriber finds its node through the command connection's view of a cluster
      await this.cmd.connect();
      await this.sub.connect();
      await this.resync();
    } catch (err) {
      this.cmd.disconnect();
      this.sub.disconnect();
      // ioredis reports a refused connection as "Connection is closed"; the socket error says why
      const reason = (this.lastError ?? (err as Error)).message;
      throw new Error(`${settingOf(this.target)}: cannot use Redis at ${describeTarget(this.target)}: ${reason}`, { cause: err });
    }
    this.started = true;
    this.generationTimer = setInterval(() => this.checkGeneration(), GENERATION_CHECK_MS);
    this.generationTimer.unref();
  }

  async put(collection: Collection, id: string, doc: object, options: WriteOptions = {}): Promise<void> {
    await this.write('gwDocPut', { op: 'p', collection, id, text: JSON.stringify(doc) }, options);
  }

  async putAll(writes: readonly DocWrite[], options: WriteOptions = {}): Promise<void> {
    if (writes.length === 0) return;
    const deadline = await this.onRedisClock(writeDeadline(options));
    const changes: Change[] = writes.map((w) => ({ op: 'p', collection: w.collection, id: w.id, text: JSON.stringify(w.doc) }));
    const hashes = changes.map((c) => this.keys.doc(c.collection));
    await this.run(changes, (messages) =>
      this.cmd.gwDocPutAll(
        2 + changes.length,
        this.keys.docChannel,
        this.keys.docGeneration,
        ...hashes,
        deadline,
        this.generation ?? '',
        ...changes.flatMap((c, i) => [c.id, c.text as string, messages[i] as string]),
      ),
    );
  }

  async create<T extends object>(collection: Collection, id: string, doc: T, options: WriteOptions = {}): Promise<{ created: boolean; current: T }> {
    const text = JSON.stringify(doc);
    const wrote = await this.write('gwDocCreate', { op: 'p', collection, id, text }, options);
    if (typeof wrote === 'string') return { created: false, current: JSON.parse(wrote) as T };
    return { created: true, current: this.get<T>(collection, id) ?? (JSON.parse(text) as T) };
  }

  async delete(collection: Collection, id: string, options: WriteOptions = {}): Promise<boolean> {
    return (await this.write('gwDocDelete', { op: 'd', collection, id, text: undefined }, options)) === true;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.generationTimer);
    this.confirmations.releaseAll();
    this.sub.disconnect();
    await this.cmd.quit().catch(() => this.cmd.disconnect());
  }

  /**
   * `deadline` (this host's clock) on Redis's clock: Redis TIME plus what is
   * left of the bound once TIME answered. Never later than the caller's own
   * deadline, and no agreement between the two hosts' clocks is assumed. Past
   * the deadline already: nothing is sent. The script is sent once TIME
   * answered, so its command timeout ends no earlier than this deadline.
   * TIME is asked of the node the write scripts run on: a cluster's nodes
   * need not agree on the time either.
   */
  private async onRedisClock(deadline: number): Promise<string> {
    let now: number;
    try {
      const [seconds, micros] = await timeAt(this.cmd, this.keys.docGeneration);
      now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    } catch (err) {
      throw new GatewayError('store_timeout', `the configuration store did not answer: ${(err as Error).message}`, { cause: err });
    }
    const left = deadline - Date.now();
    if (left <= 0) throw new GatewayError('store_timeout', 'the configuration store answered past the write deadline; nothing was written');
    return String(now + left);
  }

  /** One document's script: its hash, the channel, the id, the JSON, the message and the deadline. */
  private async write(name: DocScript, change: Change, options: WriteOptions): Promise<true | false | string> {
    const deadline = await this.onRedisClock(writeDeadline(options));
    return this.run([change], (messages) =>
      this.cmd[name](this.keys.doc(change.collection), this.keys.docChannel, this.keys.docGeneration, change.id, change.text ?? '', messages[0] as string, deadline, this.generation ?? ''),
    );
  }

  /**
   * Runs a write script and waits (bounded) until its last message comes
   * back (the script publishes in order, so every earlier one has too) and
   * every other replica the message reached says it applied it: a change
   * answered is in force on every replica from the next request on. When
   * the echo is late (the subscriber is reconnecting) the changes are applied
   * here so this replica reads its own write; the reload that follows the
   * reconnect puts everything in Redis order again.
   */
  private async run(changes: readonly Change[], exec: (messages: string[]) => Promise<ScriptReply>): Promise<true | false | string> {
    const tokens = changes.map(() => `${this.origin}:${++this.seq}`);
    const messages = changes.map(
      (c, i) => `[${JSON.stringify(c.op)},${JSON.stringify(c.collection)},${JSON.stringify(c.id)},${JSON.stringify(tokens[i])},${c.text ?? 'null'}]`,
    );
    const heard = this.confirmations.expect(tokens[tokens.length - 1] as string);
    let wrote: ScriptReply;
    try {
      wrote = await exec(messages);
    } catch (err) {
      heard.cancel();
      throw new GatewayError('store_timeout', `the configuration store did not take the write: ${(err as Error).message}`, { cause: err });
    }
    if (!Array.isArray(wrote)) {
      heard.cancel();
      if (wrote === PAST_DEADLINE_REPLY) throw new GatewayError('store_timeout', 'the write reached the configuration store past its deadline; nothing was written');
      if (wrote === OTHER_GENERATION_REPLY) {
        this.checkGeneration();
        throw new GatewayError('store_timeout', 'the configuration store lost its data and is being restored from the gateway; nothing was written');
      }
      return wrote === 0 ? false : String(wrote);
    }
    const [{ echoed, missing }] = await Promise.all([heard.reached(Number(wrote[1])), this.replicated(changes)]);
    if (!echoed) {
      this.warnNotEchoed({ changes: changes.map((c) => `${c.collection}/${c.id}`), waited_ms: ECHO_WAIT_MS });
      for (const c of changes) this.apply(c.collection, c.id, c.text === undefined ? undefined : JSON.parse(c.text));
    } else if (missing > 0) {
      this.warnUnconfirmed({ changes: changes.map((c) => `${c.collection}/${c.id}`), replicas_missing: missing, waited_ms: ECHO_WAIT_MS });
    }
    return true;
  }

  /**
   * On a cluster: waits (bounded) until a replica of the slot's master has the
   * write. The write stands either way (it is in Redis and published); one a
   * replica did not confirm is logged, since a failover right then loses it.
   */
  private async replicated(changes: readonly Change[]): Promise<void> {
    if (!(await replicaHolds(this.cmd, this.keys.docGeneration, REPLICA_WAIT_MS))) this.warnUnreplicated({ changes: changes.map((c) => `${c.collection}/${c.id}`), waited_ms: REPLICA_WAIT_MS });
  }

  private onMessage(message: string): void {
    if (this.buffered) this.buffered.push(message);
    else this.applyMessage(message);
  }

  private applyMessage(message: string): void {
    let parsed: ChangeMessage | RestoredMessage;
    try {
      parsed = JSON.parse(message) as ChangeMessage | RestoredMessage;
      // anything may be published on the channel: only a change message's shape is applied
      if (!Array.isArray(parsed) || typeof parsed[1] !== 'string' || (parsed[0] !== RESTORED && (parsed.length < 4 || typeof parsed[2] !== 'string'))) throw new Error('not a change');
    } catch {
      this.log.warn({ channel: this.keys.docChannel }, 'ignored a malformed store change message');
      return;
    }
    if (parsed[0] === RESTORED) {
      // another replica wrote its mirror back: what Redis holds is whole again
      if (parsed[1] !== this.origin && this.started && !this.closed) void this.resyncUntilDone();
      return;
    }
    const [op, collection, id, token, doc] = parsed;
    // a collection this version does not know comes from a newer replica: not ours to mirror
    if (COLLECTIONS.includes(collection as Collection)) this.apply(collection as Collection, id, op === 'd' ? undefined : doc);
    const writer = originOf(token);
    if (writer === this.origin) this.confirmations.echoed(token);
    // the writer answers its caller once every replica applied the change
    else if (writer !== undefined) this.cmd.publish(this.keys.docAcks(writer), token).catch(() => undefined);
  }

  /** After a reconnect: the command connection may still be down, so a failed reload is retried until one succeeds. */
  private async resyncUntilDone(): Promise<void> {
    while (!this.closed) {
      try {
        await this.resync();
        return;
      } catch {
        await new Promise((r) => setTimeout(r, RESYNC_RETRY_MS));
      }
    }
  }

  /** One reload at a time; a reconnect during a reload runs another after it. */
  private resync(): Promise<void> {
    const run = (this.resyncing ?? Promise.resolve()).then(() => this.reload());
    const tracked = run.finally(() => {
      if (this.resyncing === settled) this.resyncing = undefined;
    });
    const settled = tracked.catch(() => undefined);
    this.resyncing = settled;
    return tracked;
  }

  /**
   * Subscribes, then snapshots every collection with the generation marker;
   * messages arriving meanwhile are held and applied after the snapshot. Each
   * held message is at least as new as the snapshot's view of its document or
   * older with a newer message after it, so replaying them in order ends in
   * Redis's state.
   *
   * The snapshot replaces the mirror only when it belongs to the generation
   * the mirror follows. A Redis without the marker (restarted empty, flushed)
   * or whose marker names another generation while it holds no document has
   * lost the data, not changed it: the mirror stays and is written back
   * (`restore`). A marker of another generation over documents is a data set
   * an operator put there (a backup): it is adopted.
   */
  private async reload(): Promise<void> {
    const held: string[] = [];
    this.buffered = held;
    try {
      await this.sub.subscribe(this.keys.docChannel, this.ackChannel);
      let snapshot = await this.snapshot();
      if (this.generation === undefined && snapshot.generation === null) {
        // first load of a new deployment, of documents written before hash tags, or of data written before markers: it gets its generation
        await this.adoptLegacy();
        await this.cmd.set(this.keys.docGeneration, randomUUID(), 'NX');
        snapshot = await this.snapshot();
      }
      if (this.generation === undefined || snapshot.generation === this.generation || (snapshot.generation !== null && !snapshot.empty)) {
        if (this.generation !== undefined && snapshot.generation !== this.generation) {
          this.log.warn({ was: this.generation, now: snapshot.generation }, 'the configuration store holds another data set (another generation); following it');
        }
        this.generation = snapshot.generation ?? undefined;
        this.lossSeen = false;
        COLLECTIONS.forEach((c, i) => this.replaceCollection(c, snapshot.docs[i] ?? {}));
      } else {
        await this.restore(snapshot.generation);
      }
    } catch (err) {
      if (this.started && !(err instanceof RestorePending)) this.log.error({ err }, `store reload after reconnect failed; retrying in ${RESYNC_RETRY_MS} ms`);
      throw err;
    } finally {
      this.buffered = undefined;
      for (const m of held) this.applyMessage(m);
    }
  }

  private async snapshot(): Promise<Snapshot> {
    const replies = await this.cmd
      .multi([...COLLECTIONS.map((c) => ['hgetall', this.keys.doc(c)]), ['get', this.keys.docGeneration]])
      .exec();
    const results = COLLECTIONS.map((_c, i) => {
      const [err, all] = replies?.[i] ?? [new Error('no reply')];
      if (err) throw err;
      return all as Record<string, string>;
    });
    const [err, generation] = replies?.[COLLECTIONS.length] ?? [new Error('no reply')];
    if (err) throw err;
    return { docs: results, generation: generation as string | null, empty: results.every((d) => Object.keys(d).length === 0) };
  }

  /**
   * Documents written by a version before the hash tags (`<prefix>doc:<collection>`,
   * `<prefix>doc-generation`) are copied into the tagged keys, the marker last
   * and only where none is yet, so an upgraded deployment (or a single node's
   * data imported into a cluster) keeps its configuration. The old keys stay,
   * for a rollback. Runs only while the tagged store has no marker, when every
   * write is refused, so nothing written meanwhile is overwritten.
   */
  private async adoptLegacy(): Promise<void> {
    const generation = await this.cmd.get(this.keys.legacyDocGeneration);
    if (generation === null) return;
    // one command per hash: on a cluster the old keys lie in slots of their own
    const docs = await Promise.all(COLLECTIONS.map((c) => this.cmd.hgetall(this.keys.legacyDoc(c))));
    await this.cmd.watch(this.keys.docGeneration);
    if ((await this.cmd.get(this.keys.docGeneration)) !== null) {
      await this.cmd.unwatch();
      return;
    }
    const tx = this.cmd.multi();
    COLLECTIONS.forEach((c, i) => {
      const fields = Object.entries(docs[i] ?? {}).flat();
      if (fields.length > 0) tx.hset(this.keys.doc(c), ...fields);
    });
    tx.set(this.keys.docGeneration, generation);
    if ((await tx.exec()) !== null) this.log.warn({ generation, documents: docs.reduce((n, d) => n + Object.keys(d).length, 0) }, 'configuration documents of the layout before hash tags adopted');
  }

  /**
   * Redis lost the documents: keep serving from the mirror and write it back,
   * the marker last and in the same script, so a restore cut short is
   * redone. One replica restores under a lease, and the script writes only
   * while this replica still holds it and the marker is still `seen`: a
   * restore that reaches Redis after its lease lapsed (held in transit, or
   * sent again by the client after a reconnect) writes nothing over what
   * another replica restored and the writes made since. Writes are refused
   * meanwhile (their scripts check the marker), so nothing written into the
   * empty store is lost under the restore.
   */
  private async restore(seen: string | null): Promise<void> {
    if (!this.lossSeen) {
      this.lossSeen = true;
      this.hooks.onDataLoss?.();
      this.log.error(
        { generation: this.generation, found: seen, documents: COLLECTIONS.reduce((n, c) => n + (this.data.get(c)?.size ?? 0), 0) },
        'Redis lost the configuration documents (generation marker missing or on an empty store); serving from the mirror and restoring Redis from it',
      );
    }
    const lease = await this.cmd.set(this.keys.docRestoreLease, this.origin, 'PX', RESTORE_LEASE_MS, 'NX');
    if (lease !== 'OK') throw new RestorePending('another replica is restoring the store');
    try {
      const docs = COLLECTIONS.flatMap((c) => {
        const all = [...(this.data.get(c) ?? [])];
        return [String(all.length), ...all.flatMap(([id, doc]) => [id, JSON.stringify(doc)])];
      });
      const wrote = await this.cmd.gwRestore(
        3 + COLLECTIONS.length,
        this.keys.docGeneration,
        this.keys.docRestoreLease,
        this.keys.docChannel,
        ...COLLECTIONS.map((c) => this.keys.doc(c)),
        this.origin,
        seen ?? '',
        this.generation as string,
        JSON.stringify([RESTORED, this.origin]),
        ...docs,
      );
      if (wrote !== 1) throw new RestorePending('the lease lapsed or the store changed before the restore reached it');
      await this.replicated([]);
    } finally {
      await this.cmd.gwReleaseLease(this.keys.docRestoreLease, this.origin).catch(() => undefined);
    }
    this.lossSeen = false;
    this.log.warn({ generation: this.generation }, 'configuration store restored from this replica\'s mirror');
  }

  /** A marker that no longer names the mirror's generation starts a resync (which restores when the data is gone). */
  private checkGeneration(): void {
    if (this.checkingGeneration || this.resyncing || this.closed) return;
    this.checkingGeneration = true;
    this.cmd
      .get(this.keys.docGeneration)
      .then(
        (found) => {
          if (found !== this.generation && !this.closed) void this.resyncUntilDone();
        },
        // Redis away: the connection watch reports it, and the reconnect resyncs
        () => undefined,
      )
      .finally(() => (this.checkingGeneration = false));
  }

  private replaceCollection(collection: Collection, all: Record<string, string>): void {
    const map = this.data.get(collection);
    if (!map) return;
    for (const id of [...map.keys()]) if (!(id in all)) this.apply(collection, id, undefined);
    for (const [id, text] of Object.entries(all)) {
      const current = map.get(id);
      // unchanged documents keep their identity and fire no change
      if (current === undefined || JSON.stringify(current) !== text) this.apply(collection, id, JSON.parse(text));
    }
  }

  /** Logs a lost connection once per outage rather than on every retry. */
  private watch(conn: Pick<Subscriber, 'on'>, role: string): void {
    let down = false;
    conn.on('error', (err: Error) => {
      this.lastError = err;
      if (down || !this.started || this.closed) return;
      down = true;
      this.log.warn({ role, err: err.message }, 'redis connection lost; retrying');
    });
    conn.on('ready', () => {
      if (down) this.log.warn({ role }, 'redis connection back');
      down = false;
    });
  }
}

