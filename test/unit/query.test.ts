import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { queryParam, upstreamQuery } from '../../src/http/query.js';

const KEY = 'gw_0123456789abcdefghijABCDEFGHIJ0123456789';

describe('query', () => {
  it('reads a parameter as URLSearchParams does: percent-encoded names, +, the first of repeated keys', () => {
    assert.equal(queryParam(`%6Bey=${KEY}`, 'key'), KEY);
    assert.equal(queryParam('q=a+b%20c', 'q'), 'a b c');
    assert.equal(queryParam('key=first&key=second', 'key'), 'first');
    assert.equal(queryParam('bad=%ZZ', 'bad'), '%ZZ');
    assert.equal(queryParam('flag', 'flag'), '');
    assert.equal(queryParam('', 'key'), undefined);
    assert.equal(queryParam('a=1', 'key'), undefined);
  });

  it('drops the carriers and every pair carrying a gw_ value, keeps the rest byte for byte', () => {
    assert.equal(upstreamQuery(''), '');
    assert.equal(upstreamQuery('alt=sse&q=a%20b+c&&flag'), 'alt=sse&q=a%20b+c&&flag');
    assert.equal(upstreamQuery(`alt=sse&%6Bey=AIza`, ['key']), 'alt=sse');
    assert.equal(upstreamQuery(`alt=sse&x=%67%77%5F${KEY.slice(3)}`), 'alt=sse');
    assert.equal(upstreamQuery(`note=Bearer+${KEY}&alt=sse`), 'alt=sse');
    assert.equal(upstreamQuery(`${KEY}=1`), '');
    assert.equal(upstreamQuery('tag=my_gw_thing'), 'tag=my_gw_thing');
  });
});
