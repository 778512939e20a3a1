import assert from 'node:assert/strict';
import { after, describe, it, mock } from 'node:test';
import { redisClient } from '../../src/stores/redis/client.js';
import { periodOf, telemetryKeys } from '../../src/telemetry/keys.js';
import { createLogger } from '../../src/telemetry/log.js';
import type { DecisionRecord } from '../../src/telemetry/row.js';
import { decodeEntry } from '../../src/telemetry/stream-codec.js';
import { StreamWriter } from '../../src/telemetry/stream-writer.js';
import { dropRedisPrefix, newRedisPrefix, requireRedis, TEST_REDIS } from '../helpers/gateway.js';
import { DECISION, TENANT, usageRow } from '../helpers/usage-rows.js';

/** the real setTimeout, kept before the test mocks the global one */
const realSetTimeout = setTimeout;

/** A writer on the test Redis under `prefix`, an hour's retention, counting what it appends and drops. */
function writerOn(prefix: string, maxBuffered: number, counts: { onAppended(n: number): void; onDropped?(n: number): void }): StreamWriter {
  return new StreamWriter({
    target: TEST_REDIS,
    prefix,
    retentionMs: 3_600_000,
    maxBuffered,
    log: createLogger('silent'),
    onDropped: counts.onDropped ?? (() => undefined),
    onAppended: counts.onAppended,
    onAppendFailed: () => undefined,
    sumDelayMs: 60_000,
  });
}

describe('the telemetry writer with a buffer smaller than a batch', () => {
  const prefix = newRedisPrefix();
  after(() => dropRedisPrefix(prefix));

  it('sends the buffer as soon as it is full, without waiting for its flush timer', async () => {
    await requireRedis();
    const BUFFER = 4;
    let appended = 0;
    let dropped = 0;
    let allAppended: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (allAppended = resolve));
    const writer = writerOn(prefix, BUFFER, {
      onDropped: (n) => (dropped += n),
      onAppended: (n) => {
        appended += n;
        if (appended === BUFFER) allAppended();
      },
    });
    await writer.start();
    // the flush timer never fires: only a send the buffer itself starts can append the rows
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const now = Date.now();
      for (let i = 0; i < BUFFER; i++) writer.append(usageRow(i, now), DECISION);
      const outcome = await Promise.race([done.then(() => 'appended'), new Promise<string>((resolve) => realSetTimeout(() => resolve('still waiting for the flush timer'), 10_000))]);
      assert.equal(outcome, 'appended');
      assert.equal(dropped, 0);
      assert.equal(writer.buffered, 0);
    } finally {
      mock.timers.reset();
      await writer.close(1000);
    }
  });
});

describe('the telemetry writer\'s rows, framed in one script argument per call', () => {
  const prefix = newRedisPrefix();
  after(() => dropRedisPrefix(prefix));

  it('appends every row whole, whatever its strings hold, and counts each once in usage', async () => {
    await requireRedis();
    let appended = 0;
    const writer = writerOn(prefix, 1000, { onAppended: (n) => (appended += n) });
    const admin = redisClient(TEST_REDIS, {});
    await writer.start();
    try {
      const now = Date.now();
      // the separators of the append's framing and of the rollup field, quotes, non-ASCII: all inside values
      const tricky = 'a\x1eb\x1fc "d" é 😀';
      const rows = Array.from({ length: 30 }, (_, i) => usageRow(i, now, { ts: new Date(now).toISOString(), team: i % 2 === 0 ? tricky : 'ops', model: i % 3 === 0 ? tricky : 'gpt-4o' }));
      const decision: DecisionRecord = { ...DECISION, skills: [{ skill: 'guardrails', mode: 'prod', arm: 'prod', outcome: 'miss', ms: 0.1, detail: JSON.stringify({ note: tricky }) }] };
      for (const row of rows) writer.append(row, decision);
      await writer.flush();
      assert.equal(appended, rows.length);
      const keys = telemetryKeys(prefix, TENANT);
      const entries = await admin.xrange(keys.rows, '-', '+');
      const read = entries.map(([, fields]) => decodeEntry(fields, true));
      assert.deepEqual(read.map((e) => e?.row), rows);
      assert.ok(read.every((e) => JSON.stringify(e?.decision) === JSON.stringify(decision)));
      const minute = await admin.hgetall(keys.usage('minute', periodOf('minute', now)));
      assert.equal(Object.values(minute).reduce((n, v) => n + Number(v.split(' ')[0]), 0), rows.length);
    } finally {
      admin.disconnect();
      await writer.close(1000);
    }
  });
});
