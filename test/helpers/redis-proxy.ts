import { createServer, Socket, type Server } from 'node:net';
import { REDIS_URL, SECRETS_KEY, dropRedisPrefix, newRedisPrefix, requireRedis, startTestGateway, type Bootstrap, type TestGateway } from './gateway.js';

export interface RedisProxy {
  url: string;
  /** stops passing commands on: to the gateway the store looks partitioned (connected, silent) */
  hang(): void;
  /**
   * passes commands on until one of these (e.g. `eval`, `evalsha`) is sent on
   * any connection, then hangs from that command on: the command is delayed in
   * transit, not lost, and reaches Redis on resume
   */
  hangOnCommand(...names: string[]): void;
  /** as hangOnCommand, from the first command whose bytes carry `text` (an argument only one command sends) */
  hangOnText(text: string): void;
  /** whether commands are held in transit now */
  holding(): boolean;
  /** passes held commands on, in order, and everything after */
  resume(): void;
  /** resets every connection (as a partition ending in a reset: what was held in transit is lost) and passes everything from then on */
  cut(): void;
  close(): Promise<void>;
}

/** A TCP proxy in front of the test Redis (REDIS_URL) that can stop answering on demand. */
export async function startRedisProxy(): Promise<RedisProxy> {
  await requireRedis();
  const target = new URL(REDIS_URL);
  const port = Number(target.port || 6379);
  const host = target.hostname;
  let hanging = false;
  let trigger: ((chunk: string) => boolean) | undefined;
  const held: Array<() => void> = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = new Socket().connect(port, host);
    sockets.add(client).add(upstream);
    client.on('data', (chunk: Buffer) => {
      if (!hanging && trigger?.(chunk.toString('latin1'))) hanging = true;
      if (hanging) held.push(() => upstream.write(chunk));
      else upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `redis://127.0.0.1:${(server.address() as { port: number }).port}`,
    hang: () => (hanging = true),
    hangOnCommand(...names: string[]) {
      // a command is a RESP array whose first bulk string is its name
      const command = new RegExp(`\\*\\d+\r\n\\$\\d+\r\n(?:${names.join('|')})\r\n`, 'i');
      trigger = (chunk) => command.test(chunk);
    },
    hangOnText(text: string) {
      trigger = (chunk) => chunk.includes(text);
    },
    holding: () => held.length > 0,
    resume() {
      hanging = false;
      trigger = undefined;
      for (const send of held.splice(0)) send();
    },
    cut() {
      hanging = false;
      trigger = undefined;
      held.length = 0;
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** A gateway whose Redis sits behind a proxy the test can make hang. */
export async function startGatewayBehindProxy(
  bootstrap: Bootstrap,
  env: Record<string, string>,
): Promise<{ gw: TestGateway; proxy: RedisProxy; /** its GW_REDIS_PREFIX */ prefix: string; close(): Promise<void> }> {
  const proxy = await startRedisProxy();
  const prefix = newRedisPrefix();
  const gw = await startTestGateway({ bootstrap, env: { GW_REDIS_URL: proxy.url, GW_REDIS_PREFIX: prefix, GW_SECRETS_KEY: SECRETS_KEY, GW_WORKERS: '1', ...env } });
  return {
    gw,
    proxy,
    prefix,
    async close() {
      proxy.resume();
      await gw.close();
      await proxy.close();
      await dropRedisPrefix(prefix);
    },
  };
}
