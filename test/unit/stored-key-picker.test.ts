import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StoredKeyDestinations } from '../../src/destinations/stored-keys.js';
import type { CoolDowns } from '../../src/stores/cool-downs.js';
import type { StoredDestination } from '../../src/tenancy/vendor-keys.js';
import { OriginFull } from '../../src/upstream/inflight.js';

/** Cool-downs that only record what they were told. */
function recordingCoolDowns(): CoolDowns & { cooled: string[] } {
  const cooled: string[] = [];
  return { cooled, cooling: () => new Set<string>(), coolDown: (_org, id) => void cooled.push(id), start: async () => {}, close: () => {} };
}

const key = (id: string, merit: number): StoredDestination => ({ id, credential: { secret: `sk-${id}`, scheme: 'api_key', source: 'stored' }, location: {}, merit, lastResort: false, maxInflight: undefined });

describe('stored keys as destinations: a full origin', () => {
  it('moves the call on to the next key, and cools the key down no more than a key at its own limit', async () => {
    const coolDowns = recordingCoolDowns();
    const keys = new StoredKeyDestinations(coolDowns, 30_000);
    const picker = await keys.picker('org', 'cloudx', [key('cloudx/east', 0), key('cloudx/west', 1)], (l) => l);
    const full = new OriginFull('overloaded', 'origin full', { summary: true });
    assert.equal(picker.movesOn.error(full), true, 'nothing was sent: another key may take the call');
    const first = picker.next(new Set());
    assert.equal(first && 'id' in first ? first.id : undefined, 'cloudx/east');
    picker.ended?.('cloudx/east', 'at_limit');
    assert.deepEqual(coolDowns.cooled, [], 'a full origin says nothing against the key');
    picker.ended?.('cloudx/west', 'connect_failed');
    assert.deepEqual(coolDowns.cooled, ['cloudx/west']);
    assert.deepEqual(picker.steps?.().map((s) => s.outcome), ['at_limit', 'connect_failed']);
  });
});
