import { createServer, Socket, type Server } from 'node:net';

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
