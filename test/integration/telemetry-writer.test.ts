import assert from 'node:assert/strict';
import { after, describe, it, mock } from 'node:test';
import { createLogger } from '../../src/telemetry/log.js';
import { StreamWriter } from '../../src/telemetry/stream-writer.js';
import { dropRedisPrefix, newRedisPrefix, requireRedis, TEST_REDIS } from '../helpers/gateway.js';
import { DECISION, usageRow } from '../helpers/usage-rows.js';

/** the real setTimeout, kept before the test mocks the global one */
const realSetTimeout = setTimeout;

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
    const writer = new StreamWriter({
      target: TEST_REDIS,
      prefix,
      retentionMs: 3_600_000,
      maxBuffered: BUFFER,
      log: createLogger('silent'),
      onDropped: (n) => (dropped += n),
      onAppended: (n) => {
        appended += n;
        if (appended === BUFFER) allAppended();
      },
      onAppendFailed: () => undefined,
      sumDelayMs: 60_000,
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
