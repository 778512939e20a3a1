import { EventEmitter } from 'node:events';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { isCluster, keySlot, nodeCredentials, type RedisClient, type RedisTarget } from './client.js';

/**
 * The connection a replica hears configuration changes on. It emits `ready`
 * after every (re)connect, with no channel subscribed: subscribing again and
 * reloading is the listener's job, since messages sent while it was away are
 * lost. `message` and `error` are Redis's.
 */
export interface Subscriber {
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  on(event: 'ready', listener: () => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
  connect(): Promise<void>;
  subscribe(...channels: string[]): Promise<unknown>;
  disconnect(): void;
}

/** Between attempts to reach the master of the channel's slot while a failover completes. */
const REOPEN_MS = 200;

type SubscriberOptions = Pick<RedisOptions, 'connectionName' | 'connectTimeout'>;

/**
 * One node: a connection that reconnects by itself. A cluster: a connection
 * to the master serving the channel's hash slot, which is where the change
 * scripts publish (they write that slot), so a message is heard on the node
 * that sent it. Classic PUBLISH reaches every node of a cluster, but a
 * subscriber on another node hears it over the cluster bus: a master that
 * fails loses what it had not passed on, and that subscriber's connection
 * never drops to say so. Here the master's failure drops the connection, and
 * the reload that follows on the promoted replica finds every change.
 */
export function redisSubscriber(target: RedisTarget, commands: RedisClient, channel: string, options: SubscriberOptions): Subscriber {
  if (!isCluster(target) || !(commands instanceof Cluster)) {
    return new Redis(target as string, { ...options, lazyConnect: true, maxRetriesPerRequest: null, autoResubscribe: false });
  }
  return new SlotSubscriber(commands, channel, { ...options, ...nodeCredentials(target) });
}

class SlotSubscriber extends EventEmitter implements Subscriber {
  private conn: Redis | undefined;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;

  constructor(
    private readonly cluster: Cluster,
    private readonly channel: string,
    private readonly options: RedisOptions,
  ) {
    super();
  }

  /** The first connection: start-up waits for it and fails when it cannot be made. */
  async connect(): Promise<void> {
    await this.open();
  }

  async subscribe(...channels: string[]): Promise<unknown> {
    if (!this.conn) throw new Error('the subscriber is not connected');
    return this.conn.subscribe(...channels);
  }

  disconnect(): void {
    this.closed = true;
    clearTimeout(this.retry);
    this.conn?.disconnect();
  }

  private async open(): Promise<void> {
    const slot = keySlot(this.channel);
    const master = this.cluster.slots[slot]?.[0];
    if (!master) throw new Error(`no master serves slot ${slot} of ${this.channel}`);
    const at = master.lastIndexOf(':');
    // no reconnects of its own: a lost master is not waited for, the slot's master is looked up again
    const conn = new Redis({ ...this.options, host: master.slice(0, at), port: Number(master.slice(at + 1)), lazyConnect: true, retryStrategy: () => null, autoResubscribe: false, maxRetriesPerRequest: null });
    this.conn = conn;
    conn.on('message', (ch: string, message: string) => this.emit('message', ch, message));
    conn.on('error', (err: Error) => this.emit('error', err));
    conn.on('ready', () => this.emit('ready'));
    conn.once('end', () => {
      if (this.conn === conn) this.later();
    });
    await conn.connect();
  }

  private later(): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.reopen();
    }, REOPEN_MS).unref();
  }

  /** Asks the cluster who serves the slot now (a replica may have been promoted) and connects there; again until it works. */
  private reopen(): void {
    if (this.closed) return;
    this.cluster.refreshSlotsCache(() => {
      this.open().catch((err: Error) => {
        this.emit('error', err);
        this.later();
      });
    });
  }
}
