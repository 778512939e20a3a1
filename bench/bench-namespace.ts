import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

/**
 * A fresh Redis namespace for one bench run on a shared Redis, and its
 * removal: `run` gets the prefix, and every key under it is deleted when it
 * ends, fails or is interrupted (Ctrl-C).
 */
export async function inFreshNamespace(url: string, run: (prefix: string, admin: Redis) => Promise<void>): Promise<void> {
  const prefix = `gwbench:${randomBytes(4).toString('hex')}:`;
  const admin = new Redis(url);
  const drop = async (): Promise<void> => {
    let cursor = '0';
    do {
      const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await admin.unlink(...keys);
    } while (cursor !== '0');
  };
  process.once('SIGINT', () => void drop().finally(() => process.exit(130)));
  try {
    await run(prefix, admin);
  } finally {
    await drop();
    admin.disconnect();
  }
}

/** Whether a Redis answers at `url` within a second (the bench's Redis targets are left out otherwise). */
export async function redisAnswers(url: string): Promise<boolean> {
  const probe = new Redis(url, { lazyConnect: true, connectTimeout: 1000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}
