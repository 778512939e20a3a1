import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { GatewayError } from '../../src/errors.js';
import { EmbeddedDocStore } from '../../src/stores/embedded/doc-store.js';
import { clusterTarget, type RedisClient } from '../../src/stores/redis/client.js';
import { RedisDocStore } from '../../src/stores/redis/doc-store.js';
import { redisKeys } from '../../src/stores/redis/prefixes.js';
import type { DocStore } from '../../src/stores/types.js';
import { dropRedisPrefix, newRedisPrefix, nodesOf, REDIS_URL, TEST_REDIS, testRedis } from '../helpers/gateway.js';
import { privateRedis } from '../helpers/private-redis.js';
import { startRedisProxy } from '../helpers/redis-proxy.js';
import { eventually, freePort } from '../helpers/wait.js';

interface Doc {
  n: number;
  tags?: string[];
}

/**
 * One backing store (a data dir, a Redis namespace, or nothing) that several
 * store instances can open: `open()` is another replica, or the same one
 * after a restart.
 */
interface Backing {
  name: string;
  /** several live instances see each other's writes (Redis) */
  shared: boolean;
  /** a new instance sees what a closed one wrote */
  persistent: boolean;
  open(): Promise<DocStore>;
  cleanup(): Promise<void>;
}

const opened: DocStore[] = [];

async function started(store: DocStore): Promise<DocStore> {
  await store.start();
  opened.push(store);
  return store;
}

const backings: Array<() => Promise<Backing>> = [
  async () => ({ name: 'embedded, no data dir', shared: false, persistent: false, open: () => started(new EmbeddedDocStore()), cleanup: async () => undefined }),
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gw-docs-'));
    return { name: 'embedded, data dir', shared: false, persistent: true, open: () => started(new EmbeddedDocStore(dir)), cleanup: () => rm(dir, { recursive: true, force: true }) };
  },
  async () => {
    const prefix = newRedisPrefix();
    return { name: 'redis', shared: true, persistent: true, open: () => started(new RedisDocStore(TEST_REDIS, redisKeys(prefix))), cleanup: () => dropRedisPrefix(prefix) };
  },
];

/** closes the stores opened so far (a Redis store left open would see its prefix dropped as a lost store, and restore it) */
const closeOpened = () => Promise.all(opened.splice(0).map((s) => s.close()));

after(closeOpened);

for (const makeBacking of backings) {
  describe(`DocStore contract`, async () => {
    const backing = await makeBacking();
    after(async () => {
      await closeOpened();
      await backing.cleanup();
    });

    describe(backing.name, () => {
      it('puts, gets and lists documents; the mirror holds frozen copies', async () => {
        const store = await backing.open();
        const doc: Doc = { n: 1, tags: ['a'] };
        await store.put('orgs', 'o1', doc);
        doc.tags?.push('mutated after put');
        const got = store.get<Doc>('orgs', 'o1');
        assert.deepEqual(got, { n: 1, tags: ['a'] });
        assert.ok(Object.isFrozen(got) && Object.isFrozen(got?.tags));
        assert.throws(() => (got as Doc).tags?.push('x'), TypeError);
        await store.put('orgs', 'o2', { n: 2 });
        assert.deepEqual([...store.values<Doc>('orgs')].map((d) => d.n).sort(), [1, 2]);
        assert.equal(store.get('dev_keys', 'o1'), undefined, 'collections are separate');
      });

      it('create writes only once and returns what is there', async () => {
        const store = await backing.open();
        const changes: string[] = [];
        store.onChange((c, id) => changes.push(`${c}/${id}`));
        assert.deepEqual(await store.create<Doc>('dev_keys', 'k1', { n: 1 }), { created: true, current: { n: 1 } });
        assert.deepEqual(await store.create<Doc>('dev_keys', 'k1', { n: 2 }), { created: false, current: { n: 1 } });
        assert.deepEqual(store.get('dev_keys', 'k1'), { n: 1 });
        assert.deepEqual(changes, ['dev_keys/k1']);
      });

      it('deletes and says whether something was there', async () => {
        const store = await backing.open();
        await store.put('vendor_keys', 'v1', { n: 1 });
        assert.equal(await store.delete('vendor_keys', 'v1'), true);
        assert.equal(store.get('vendor_keys', 'v1'), undefined);
        assert.equal(await store.delete('vendor_keys', 'v1'), false);
      });

      it('notifies listeners of its own writes after the mirror changed; a throwing listener harms nobody', async () => {
        const store = await backing.open();
        const seen: Array<[string, string, unknown]> = [];
        store.onChange(() => {
          throw new Error('listener bug');
        });
        store.onChange((c, id) => seen.push([c, id, store.get(c, id)]));
        await store.put('key_skills', 's1', { n: 7 });
        await store.delete('key_skills', 's1');
        assert.deepEqual(seen, [
          ['key_skills', 's1', { n: 7 }],
          ['key_skills', 's1', undefined],
        ]);
      });

      it('every collection named in COLLECTIONS works', async () => {
        const store = await backing.open();
        for (const c of ['orgs', 'dev_keys', 'vendor_keys', 'key_skills', 'org_policy', 'transitions'] as const) {
          await store.put(c, 'every', { n: 1 });
          assert.deepEqual(store.get(c, 'every'), { n: 1 });
        }
      });

      it('concurrent writes to one document end in one agreed state', async () => {
        const store = await backing.open();
        const writers = backing.shared ? [store, await backing.open()] : [store];
        await Promise.all(Array.from({ length: 40 }, (_, i) => writers[i % writers.length]!.put('org_policy', 'hot', { n: i })));
        const agreed = () => new Set(writers.map((w) => w.get<Doc>('org_policy', 'hot')?.n)).size === 1;
        await eventually(agreed, 'the replicas to agree').catch(() => undefined);
        const values = writers.map((w) => w.get<Doc>('org_policy', 'hot')?.n);
        assert.ok(values[0] !== undefined);
        assert.equal(new Set(values).size, 1, `replicas disagree: ${values.join(', ')}`);
        if (backing.persistent) {
          await store.close();
          const reopened = await backing.open();
          assert.equal(reopened.get<Doc>('org_policy', 'hot')?.n, values[0], 'the mirror agrees with the backing store');
        }
      });

      it('concurrent creates of one id: exactly one wins', async () => {
        const a = await backing.open();
        const writers = backing.shared ? [a, await backing.open()] : [a];
        const results = await Promise.all(Array.from({ length: 10 }, (_, i) => writers[i % writers.length]!.create<Doc>('orgs', 'race', { n: i })));
        assert.equal(results.filter((r) => r.created).length, 1);
        const winner = results.find((r) => r.created)?.current.n;
        for (const r of results) assert.equal(r.current.n, winner);
      });

      it('putAll writes several documents at once; each change is notified after the mirror holds all of them', async () => {
        const store = await backing.open();
        const seen: Array<[string, boolean]> = [];
        store.onChange((c, id) => seen.push([`${c}/${id}`, store.get('transitions', 'pa-t') !== undefined]));
        await store.putAll([
          { collection: 'key_skills', id: 'pa-k', doc: { n: 1 } },
          { collection: 'transitions', id: 'pa-t', doc: { n: 2 } },
        ]);
        assert.deepEqual(store.get('key_skills', 'pa-k'), { n: 1 });
        assert.deepEqual(store.get('transitions', 'pa-t'), { n: 2 });
        assert.deepEqual(seen.map(([change]) => change), ['key_skills/pa-k', 'transitions/pa-t']);
        const other = backing.shared || backing.persistent ? await backing.open() : undefined;
        if (other) await eventually(() => other.get('transitions', 'pa-t') !== undefined, 'the other store to see the write').catch(() => undefined);
        if (other) assert.deepEqual([other.get('key_skills', 'pa-k'), other.get('transitions', 'pa-t')], [{ n: 1 }, { n: 2 }]);
        await store.putAll([]);
      });

      it('putAll with a deadline already past writes nothing and rejects with store_timeout', async () => {
        const store = await backing.open();
        await assert.rejects(
          store.putAll(
            [
              { collection: 'key_skills', id: 'late-k', doc: { n: 1 } },
              { collection: 'transitions', id: 'late-t', doc: { n: 2 } },
            ],
            { deadline: Date.now() - 1 },
          ),
          (err: unknown) => err instanceof GatewayError && err.type === 'store_timeout',
        );
        assert.equal(store.get('key_skills', 'late-k'), undefined);
        assert.equal(store.get('transitions', 'late-t'), undefined);
        await store.putAll([{ collection: 'key_skills', id: 'late-k', doc: { n: 3 } }], { deadline: Date.now() + 5000 });
        assert.deepEqual(store.get('key_skills', 'late-k'), { n: 3 }, 'within its deadline it writes');
      });

      it('put, create and delete with a deadline already past change nothing and reject with store_timeout', async () => {
        const store = await backing.open();
        await store.put('orgs', 'late-kept', { n: 1 });
        const past = { deadline: Date.now() - 1 };
        const timedOut = (err: unknown) => err instanceof GatewayError && err.type === 'store_timeout';
        await assert.rejects(store.put('orgs', 'late-kept', { n: 2 }, past), timedOut);
        await assert.rejects(store.create('orgs', 'late-new', { n: 1 }, past), timedOut);
        await assert.rejects(store.delete('orgs', 'late-kept', past), timedOut);
        assert.deepEqual(store.get('orgs', 'late-kept'), { n: 1 });
        assert.equal(store.get('orgs', 'late-new'), undefined);
      });

      if (backing.persistent) {
        it('a new instance starts with what was written', async () => {
          const first = await backing.open();
          await first.put('transitions', 't1', { n: 1 });
          await first.put('transitions', 't2', { n: 2 });
          await first.delete('transitions', 't2');
          await first.close();
          const second = await backing.open();
          assert.deepEqual(second.get('transitions', 't1'), { n: 1 });
          assert.equal(second.get('transitions', 't2'), undefined);
        });
      }

      if (backing.shared) {
        it('a write is in every replica mirror when put resolves, with no turn of the event loop in between', async () => {
          const a = await backing.open();
          const b = await backing.open();
          for (let i = 0; i < 20; i++) {
            await a.put('dev_keys', 'seen', { n: i });
            assert.equal(b.get<Doc>('dev_keys', 'seen')?.n, i, `replica b missed write ${i}`);
          }
          await b.delete('dev_keys', 'seen');
          assert.equal(a.get('dev_keys', 'seen'), undefined);
        });

        it('replicas notify listeners of changes made elsewhere', async () => {
          const a = await backing.open();
          const b = await backing.open();
          const seen: string[] = [];
          b.onChange((c, id) => seen.push(`${c}/${id}`));
          await a.put('org_policy', 'elsewhere', { n: 1 });
          assert.deepEqual(seen, ['org_policy/elsewhere']);
        });
      }
    });
  });
}

describe('EmbeddedDocStore on disk', () => {
  const dirs: string[] = [];
  const newDir = async () => {
    const d = await mkdtemp(join(tmpdir(), 'gw-embedded-'));
    dirs.push(d);
    return d;
  };
  after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

  it('each put resolves only once its own write is in state.json (concurrent writes share flushes)', async () => {
    const dir = await newDir();
    const store = new EmbeddedDocStore(dir);
    await store.start();
    const checks = Array.from({ length: 30 }, (_, i) =>
      store.put('orgs', `o${i}`, { n: i }).then(async () => {
        const onDisk = JSON.parse(await readFile(join(dir, 'state.json'), 'utf8')) as { orgs: Record<string, Doc> };
        return onDisk.orgs[`o${i}`]?.n === i;
      }),
    );
    assert.deepEqual(await Promise.all(checks), Array(30).fill(true));
    await store.close();
  });

  it('a garbage temporary file left by a crash is ignored and removed; the state is whole', async () => {
    const dir = await newDir();
    const first = new EmbeddedDocStore(dir);
    await first.start();
    await first.put('orgs', 'kept', { n: 1 });
    await first.close();
    await writeFile(join(dir, 'state.json.99999.tmp'), '{"orgs":{"kept":{"n":');
    const second = new EmbeddedDocStore(dir);
    await second.start();
    assert.deepEqual(second.get('orgs', 'kept'), { n: 1 });
    assert.deepEqual((await readdir(dir)).filter((f) => f.endsWith('.tmp')), []);
  });

  it('a corrupt state.json stops start-up with a message naming GW_DATA_DIR and the file', async () => {
    const dir = await newDir();
    await writeFile(join(dir, 'state.json'), '{"orgs":{"a":{"n":1}');
    await assert.rejects(new EmbeddedDocStore(dir).start(), (err: Error) => /GW_DATA_DIR/.test(err.message) && err.message.includes(join(dir, 'state.json')) && /not valid JSON/.test(err.message));
    await writeFile(join(dir, 'state.json'), '{"orgs":[1,2]}');
    await assert.rejects(new EmbeddedDocStore(dir).start(), /GW_DATA_DIR: .*collection orgs must be a JSON object/);
  });

  it('collections written by a newer version survive a write by this one', async () => {
    const dir = await newDir();
    await writeFile(join(dir, 'state.json'), JSON.stringify({ orgs: { a: { n: 1 } }, future_things: { x: { y: 1 } } }));
    const store = new EmbeddedDocStore(dir);
    await store.start();
    await store.put('orgs', 'b', { n: 2 });
    const onDisk = JSON.parse(await readFile(join(dir, 'state.json'), 'utf8')) as Record<string, unknown>;
    assert.deepEqual(onDisk['future_things'], { x: { y: 1 } });
    assert.deepEqual(onDisk['orgs'], { a: { n: 1 }, b: { n: 2 } });
  });

  /** a started store holding `seed`, whose data dir then turns into a file: every later write fails */
  const storeThatCannotPersist = async (seed: { collection: 'orgs' | 'key_skills'; id: string; doc: Doc }) => {
    const dir = await newDir();
    const store = new EmbeddedDocStore(dir);
    await store.start();
    await store.put(seed.collection, seed.id, seed.doc);
    await rm(dir, { recursive: true });
    await writeFile(dir, 'not a directory');
    return { dir, store };
  };

  it('a write that cannot be persisted fails and is undone in the mirror', async () => {
    const { dir, store } = await storeThatCannotPersist({ collection: 'orgs', id: 'before', doc: { n: 1 } });
    await assert.rejects(store.put('orgs', 'after', { n: 2 }), /GW_DATA_DIR: cannot persist orgs\/after/);
    assert.equal(store.get('orgs', 'after'), undefined);
    await assert.rejects(store.put('orgs', 'before', { n: 3 }), /GW_DATA_DIR/);
    assert.deepEqual(store.get('orgs', 'before'), { n: 1 });
    await rm(dir, { force: true });
  });

  it('a putAll that cannot be persisted fails and is undone whole', async () => {
    const { dir, store } = await storeThatCannotPersist({ collection: 'key_skills', id: 'k', doc: { n: 1 } });
    await assert.rejects(
      store.putAll([
        { collection: 'key_skills', id: 'k', doc: { n: 2 } },
        { collection: 'transitions', id: 't', doc: { n: 2 } },
      ]),
      /GW_DATA_DIR: cannot persist key_skills\/k, transitions\/t/,
    );
    assert.deepEqual(store.get('key_skills', 'k'), { n: 1 });
    assert.equal(store.get('transitions', 't'), undefined);
    await rm(dir, { force: true });
  });

  it('one process per data directory: a live holder refuses start-up, a dead one is taken over', async () => {
    const dir = await newDir();
    // the test runner's parent process is alive and is not us
    await writeFile(join(dir, 'state.lock'), String(process.ppid));
    await assert.rejects(new EmbeddedDocStore(dir).start(), new RegExp(`GW_DATA_DIR: .* is in use by process ${process.ppid}`));
    const gone = spawn(process.execPath, ['-e', '0']);
    await once(gone, 'exit');
    await writeFile(join(dir, 'state.lock'), String(gone.pid));
    const store = new EmbeddedDocStore(dir);
    await store.start();
    assert.equal(await readFile(join(dir, 'state.lock'), 'utf8'), String(process.pid));
    await store.close();
    assert.deepEqual(await readdir(dir), [], 'close releases the lock');
  });

  it('a process killed mid-write never leaves a torn state.json', async () => {
    const dir = await newDir();
    // a writer that rewrites a ~200 KB state as fast as it can, killed at varying moments
    const script = `
      import { EmbeddedDocStore } from ${JSON.stringify(new URL('../../src/stores/embedded/doc-store.ts', import.meta.url).pathname)};
      const store = new EmbeddedDocStore(${JSON.stringify(dir)});
      await store.start();
      const pad = 'x'.repeat(2000);
      await store.put('transitions', 'first', { n: -1, pad });
      process.send?.('ready');
      for (let i = 0; ; i++) await store.put('transitions', 't' + (i % 100), { n: i, pad });
    `;
    for (const delayMs of [5, 20, 45, 80, 130]) {
      const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
      const started = await Promise.race([once(child, 'message').then(() => true), once(child, 'exit').then(() => false)]);
      assert.ok(started, 'the writer died before writing');
      await new Promise((r) => setTimeout(r, delayMs));
      child.kill('SIGKILL');
      await once(child, 'exit');
      const store = new EmbeddedDocStore(dir);
      await store.start();
      const docs = [...store.values<Doc & { pad: string }>('transitions')];
      assert.ok(docs.length > 0, `state lost after a kill at ${delayMs} ms`);
      for (const d of docs) assert.equal(d.pad.length, 2000);
      await store.close();
    }
  });
});

/** A private redis-server on a free port, so tests can take it down without touching the shared one. */
describe('RedisDocStore and its connection', () => {
  it('ignores anything on the change channel that is not a change message, and keeps following changes', async () => {
    const prefix = newRedisPrefix();
    after(async () => {
      await closeOpened();
      await dropRedisPrefix(prefix);
    });
    const keys = redisKeys(prefix);
    const store = await started(new RedisDocStore(TEST_REDIS, keys));
    const admin = testRedis();
    after(() => admin.disconnect());
    for (const stray of ['null', '42', '[1]', '{"a":1}', 'not json']) await admin.publish(keys.docChannel, stray);
    const other = await started(new RedisDocStore(TEST_REDIS, keys));
    await other.put('orgs', 'still-following', { n: 1 });
    await eventually(() => store.get('orgs', 'still-following') !== undefined, 'the change after the stray messages');
  });


  it('Redis down at start: start rejects quickly with a message naming GW_REDIS_URL, and lets go', async () => {
    const port = await freePort();
    const store = new RedisDocStore(`redis://:hunter2@127.0.0.1:${port}`, redisKeys(newRedisPrefix()));
    const t0 = Date.now();
    await assert.rejects(store.start(), (err: Error) => /^GW_REDIS_URL: cannot use Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+/.test(err.message) && /ECONNREFUSED/.test(err.message) && !err.message.includes('hunter2'));
    assert.ok(Date.now() - t0 < 3000);
  });

  it('a Redis Cluster none of whose seeds answers: start rejects quickly naming GW_REDIS_CLUSTER, without the password', async () => {
    const [one, two] = [await freePort(), await freePort()];
    const store = new RedisDocStore(clusterTarget(`redis://:hunter2@127.0.0.1:${one},127.0.0.1:${two}`), redisKeys(newRedisPrefix()));
    const t0 = Date.now();
    await assert.rejects(store.start(), (err: Error) => err.message.startsWith(`GW_REDIS_CLUSTER: cannot use Redis at the cluster of 127.0.0.1:${one},127.0.0.1:${two}: `) && !err.message.includes('hunter2'));
    assert.ok(Date.now() - t0 < 3000);
  });

  it('a subscriber that never acknowledges holds a write only up to the bound: the write stands, and the writer says a replica is missing', async () => {
    const prefix = newRedisPrefix();
    after(async () => {
      await closeOpened();
      await dropRedisPrefix(prefix);
    });
    const keys = redisKeys(prefix);
    const warnings: Array<[object, string]> = [];
    const log = { warn: (obj: object, msg: string) => warnings.push([obj, msg]), error: () => undefined };
    const store = await started(new RedisDocStore(TEST_REDIS, keys, log));
    // on the node the store listens on: on a cluster a script's PUBLISH counts that node's subscribers
    const admin = testRedis();
    after(() => admin.disconnect());
    const [[node]] = (await subscribersOf(admin, keys.docChannel)) as [[Redis, string]];
    const silent = node.duplicate();
    after(() => silent.disconnect());
    await silent.subscribe(keys.docChannel);
    await store.put('orgs', 'heard-by-a-stranger', { n: 1 });
    assert.deepEqual(store.get('orgs', 'heard-by-a-stranger'), { n: 1 });
    const warned = warnings.find(([, msg]) => msg.startsWith('configuration change not confirmed in time'));
    assert.ok(warned, JSON.stringify(warnings));
    assert.equal((warned[0] as { replicas_missing: number }).replicas_missing, 1);
  });

  it('reloads everything after its subscription was cut (changes made meanwhile are not lost)', async () => {
    const prefix = newRedisPrefix();
    after(async () => {
      await closeOpened();
      await dropRedisPrefix(prefix);
    });
    const keys = redisKeys(prefix);
    const store = await started(new RedisDocStore(TEST_REDIS, keys));
    await store.put('orgs', 'changed', { n: 1 });
    await store.put('orgs', 'removed', { n: 1 });
    const admin = testRedis();
    after(() => admin.disconnect());
    // changes behind the store's back, with no message: only a reload can find them
    await admin.hset(keys.doc('orgs'), 'changed', JSON.stringify({ n: 2 }), 'added', JSON.stringify({ n: 3 }));
    await admin.hdel(keys.doc('orgs'), 'removed');
    assert.deepEqual(store.get('orgs', 'changed'), { n: 1 });
    const channelSubscribers = await subscribersOf(admin, keys.docChannel);
    assert.equal(channelSubscribers.length, 1);
    const [node, id] = channelSubscribers[0]!;
    await node.client('KILL', 'ID', id);
    await eventually(() => (store.get<Doc>('orgs', 'changed')?.n ?? 0) === 2, 'the reload');
    assert.deepEqual(store.get('orgs', 'added'), { n: 3 });
    assert.equal(store.get('orgs', 'removed'), undefined);
    // and it follows changes again
    const other = await started(new RedisDocStore(TEST_REDIS, keys));
    await other.put('orgs', 'after', { n: 4 });
    await eventually(() => store.get('orgs', 'after') !== undefined, 'the change after the reload');
    assert.deepEqual(store.get('orgs', 'after'), { n: 4 });
  });

  it('with Redis gone a write fails as store_timeout; Redis back empty is not the truth: the mirror stays and is written back', async () => {
    const redis = await privateRedis();
    after(() => redis.stop());
    const keys = redisKeys('gwtest:private:');
    let losses = 0;
    const store = await started(new RedisDocStore(redis.url, keys, undefined, { onDataLoss: () => losses++ }));
    await store.put('orgs', 'o', { n: 1 });
    await store.put('dev_keys', 'k', { revoked_at: 'then' });
    await redis.stop();
    await assert.rejects(store.put('orgs', 'o', { n: 2 }), (err: unknown) => err instanceof GatewayError && err.type === 'store_timeout');
    assert.deepEqual(store.get('orgs', 'o'), { n: 1 }, 'a failed write changes nothing');
    await redis.restart();
    // the restarted server lost everything (no persistence): the reconnect finds no generation marker and restores the mirror
    const admin = new Redis(redis.url);
    after(() => admin.disconnect());
    await eventually(async () => (await admin.get(keys.docGeneration)) !== null, 'the restore');
    assert.equal(await admin.hget(keys.doc('orgs'), 'o'), JSON.stringify({ n: 1 }));
    assert.equal(await admin.hget(keys.doc('dev_keys'), 'k'), JSON.stringify({ revoked_at: 'then' }));
    assert.deepEqual(store.get('orgs', 'o'), { n: 1 }, 'the mirror never took the empty snapshot');
    assert.equal(losses, 1);
    await store.put('orgs', 'o', { n: 3 });
    assert.deepEqual(store.get('orgs', 'o'), { n: 3 });
  });

  it('FLUSHALL under two replicas: both keep their mirror, one restores, writes refused meanwhile land afterwards again', async () => {
    const redis = await privateRedis();
    after(() => redis.stop());
    const keys = redisKeys('gwtest:private:');
    const a = await started(new RedisDocStore(redis.url, keys));
    const b = await started(new RedisDocStore(redis.url, keys));
    await a.put('vendor_keys', 'acme:openai', { sealed: 'x' });
    await a.put('org_policy', 'spend_cap:acme', { cap_usd: 5 });
    await eventually(() => b.get('org_policy', 'spend_cap:acme') !== undefined, 'b follows');
    const admin = new Redis(redis.url);
    after(() => admin.disconnect());
    const generation = await admin.get(keys.docGeneration);
    assert.ok(generation);
    // no connection drops: only the marker check finds out
    await admin.flushall();
    await eventually(async () => (await admin.get(keys.docGeneration)) === generation, 'the restore');
    assert.equal(await admin.hget(keys.doc('vendor_keys'), 'acme:openai'), JSON.stringify({ sealed: 'x' }));
    assert.equal(await admin.hget(keys.doc('org_policy'), 'spend_cap:acme'), JSON.stringify({ cap_usd: 5 }));
    for (const s of [a, b]) assert.deepEqual(s.get('org_policy', 'spend_cap:acme'), { cap_usd: 5 });
    await b.put('orgs', 'after', { n: 1 });
    await eventually(() => a.get('orgs', 'after') !== undefined, 'a follows writes again');
  });

  it('a write that reaches a Redis without its generation writes nothing (store_timeout)', async () => {
    const redis = await privateRedis();
    after(() => redis.stop());
    const keys = redisKeys('gwtest:private:');
    const store = await started(new RedisDocStore(redis.url, keys));
    const admin = new Redis(redis.url);
    after(() => admin.disconnect());
    // the marker check runs once a second: a write right after the flush meets the empty store first
    await admin.flushall();
    const write = store.put('orgs', 'into-the-void', { n: 1 });
    const outcome = await write.then(
      () => 'written',
      (err: unknown) => (err instanceof GatewayError ? err.type : String(err)),
    );
    assert.equal(outcome, 'store_timeout');
    assert.equal(store.get('orgs', 'into-the-void'), undefined);
    await eventually(async () => (await admin.get(keys.docGeneration)) !== null, 'the restore');
    assert.equal(await admin.hget(keys.doc('orgs'), 'into-the-void'), null);
  });

  it('a marker of another generation over documents (a backup put back) is followed, not overwritten', async () => {
    const redis = await privateRedis();
    after(() => redis.stop());
    const keys = redisKeys('gwtest:private:');
    const store = await started(new RedisDocStore(redis.url, keys));
    await store.put('orgs', 'mine', { n: 1 });
    const admin = new Redis(redis.url);
    after(() => admin.disconnect());
    await admin.multi().flushall().hset(keys.doc('orgs'), 'restored', JSON.stringify({ n: 2 })).set(keys.docGeneration, 'from-a-backup').exec();
    await eventually(() => store.get('orgs', 'restored') !== undefined, 'the reload');
    assert.equal(store.get('orgs', 'mine'), undefined);
    assert.equal(await admin.hget(keys.doc('orgs'), 'mine'), null);
  });

  it('a putAll delayed in transit past its deadline is dropped by Redis itself: neither document is written', async () => {
    const prefix = newRedisPrefix();
    after(async () => {
      await closeOpened();
      await dropRedisPrefix(prefix);
    });
    const keys = redisKeys(prefix);
    const proxy = await startRedisProxy();
    after(() => proxy.close());
    const store = await started(new RedisDocStore(proxy.url, keys));
    // TIME passes (the deadline is set on Redis's clock), then the script is held in transit
    proxy.hangOnCommand('eval', 'evalsha');
    const write = store.putAll(
      [
        { collection: 'key_skills', id: 'k', doc: { n: 1 } },
        { collection: 'transitions', id: 't', doc: { n: 1 } },
      ],
      { deadline: Date.now() + 200 },
    );
    const outcome = write.then(
      () => 'written',
      (err: unknown) => (err instanceof GatewayError ? err.type : String(err)),
    );
    await new Promise((r) => setTimeout(r, 400));
    proxy.resume();
    assert.equal(await outcome, 'store_timeout');
    const admin = new Redis(REDIS_URL);
    after(() => admin.disconnect());
    assert.equal(await admin.hget(keys.doc('key_skills'), 'k'), null);
    assert.equal(await admin.hget(keys.doc('transitions'), 't'), null);
    assert.equal(store.get('key_skills', 'k'), undefined);
    await store.putAll([{ collection: 'key_skills', id: 'k', doc: { n: 2 } }], { deadline: Date.now() + 2000 });
    assert.equal(await admin.hget(keys.doc('key_skills'), 'k'), JSON.stringify({ n: 2 }), 'the next write in time lands');
  });

  it('documents of the layout before hash tags are adopted at the first start, the marker kept; later writes land in the tagged keys', async () => {
    const prefix = newRedisPrefix();
    after(async () => {
      await closeOpened();
      await dropRedisPrefix(prefix);
    });
    const keys = redisKeys(prefix);
    const admin = testRedis();
    after(() => admin.disconnect());
    // as a version before the tags left them: one hash per collection and the marker
    await admin.hset(keys.legacyDoc('orgs'), 'acme', JSON.stringify({ n: 1 }));
    await admin.hset(keys.legacyDoc('dev_keys'), 'k1', JSON.stringify({ revoked_at: 'then' }));
    await admin.set(keys.legacyDocGeneration, 'the-old-generation');
    const store = await started(new RedisDocStore(TEST_REDIS, keys));
    assert.deepEqual(store.get('orgs', 'acme'), { n: 1 });
    assert.deepEqual(store.get('dev_keys', 'k1'), { revoked_at: 'then' });
    assert.equal(await admin.get(keys.docGeneration), 'the-old-generation');
    await store.put('orgs', 'later', { n: 2 });
    assert.equal(await admin.hget(keys.doc('orgs'), 'later'), JSON.stringify({ n: 2 }));
    // a second replica starting afterwards follows the adopted store, and nothing is adopted twice
    await admin.hset(keys.legacyDoc('orgs'), 'written-by-an-old-replica', JSON.stringify({ n: 3 }));
    const other = await started(new RedisDocStore(TEST_REDIS, keys));
    assert.deepEqual(other.get('orgs', 'later'), { n: 2 });
    assert.equal(other.get('orgs', 'written-by-an-old-replica'), undefined);
  });

  it('ignores a malformed message on its channel', async () => {
    const prefix = newRedisPrefix();
    after(async () => {
      await closeOpened();
      await dropRedisPrefix(prefix);
    });
    const keys = redisKeys(prefix);
    const store = await started(new RedisDocStore(TEST_REDIS, keys));
    const admin = testRedis();
    after(() => admin.disconnect());
    await admin.publish(keys.docChannel, 'not json');
    await admin.publish(keys.docChannel, JSON.stringify(['p', 'no_such_collection', 'x', 't', { n: 1 }]));
    await store.put('orgs', 'fine', { n: 1 });
    assert.deepEqual(store.get('orgs', 'fine'), { n: 1 });
  });
});

/** the store subscribers of one namespace, each with the node it is connected to, found by the connection name the store sets */
async function subscribersOf(admin: RedisClient, channel: string): Promise<Array<[Redis, string]>> {
  const found: Array<[Redis, string]> = [];
  await admin.ping();
  for (const node of nodesOf(admin)) {
    const list = String(await node.call('CLIENT', 'LIST', 'TYPE', 'pubsub'));
    for (const line of list.split('\n').filter(Boolean)) {
      const id = /(?:^| )id=(\d+)/.exec(line)?.[1];
      const name = / name=(\S*)/.exec(line)?.[1] ?? '';
      if (id && name.includes(channel)) found.push([node, id]);
    }
  }
  return found;
}
