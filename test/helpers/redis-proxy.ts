import { createServer, Socket, type Server } from 'node:net';
import { SECRETS_KEY, dropRedisPrefix, newRedisPrefix, startTestGateway, type Bootstrap, type TestGateway } from './gateway.js';

export interface RedisProxy {
  url: string;
  /** stops passing commands on: to the gateway the store looks partitioned (connected, silent) */
  hang(): void;
  /** passes held commands on, in order, and everything after */
  resume(): void;
  close(): Promise<void>;
}

/** A TCP proxy in front of the test Redis that can stop answering on demand. */
export async function startRedisProxy(port = 6379): Promise<RedisProxy> {
  let hanging = false;
  const held: Array<() => void> = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = new Socket().connect(port, '127.0.0.1');
    sockets.add(client).add(upstream);
    client.on('data', (chunk: Buffer) => (hanging ? held.push(() => upstream.write(chunk)) : upstream.write(chunk)));
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
    resume() {
      hanging = false;
      for (const send of held.splice(0)) send();
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** A gateway whose Redis sits behind a proxy the test can make hang. */
export async function startGatewayBehindProxy(bootstrap: Bootstrap, env: Record<string, string>): Promise<{ gw: TestGateway; proxy: RedisProxy; close(): Promise<void> }> {
  const proxy = await startRedisProxy();
  const prefix = newRedisPrefix();
  const gw = await startTestGateway({ bootstrap, env: { GW_REDIS_URL: proxy.url, GW_REDIS_PREFIX: prefix, GW_SECRETS_KEY: SECRETS_KEY, GW_WORKERS: '1', ...env } });
  return {
    gw,
    proxy,
    async close() {
      proxy.resume();
      await gw.close();
      await proxy.close();
      await dropRedisPrefix(prefix);
    },
  };
}
