import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadUws, NATIVE_BINARY } from '../../src/server/uws.js';

const FALLBACK = { App: () => 'js fallback' };

/** A loader whose native binary fails the way a missing or ABI-mismatched .node file does. */
const brokenBinary = (id: string): unknown => {
  if (id === NATIVE_BINARY) throw new Error(`Cannot find module '${id}'\nRequire stack: …`);
  if (id === 'uWebSockets.js') return FALLBACK;
  throw new Error(`unexpected module ${id}`);
};

describe('uWebSockets.js loading', () => {
  it('loads the native binary on this platform', () => {
    const { uws, native } = loadUws(false);
    assert.equal(native, true);
    assert.equal(typeof uws.App, 'function');
  });

  it('refuses the silent JS fallback, naming the binary, the cause and the override', () => {
    assert.throws(
      () => loadUws(false, brokenBinary),
      (err: Error) => {
        assert.ok(err.message.includes(NATIVE_BINARY), err.message);
        assert.match(err.message, /Cannot find module/);
        assert.doesNotMatch(err.message, /Require stack/, 'only the first line of the cause');
        assert.match(err.message, /GW_ALLOW_UWS_FALLBACK=1/);
        return true;
      },
    );
  });

  it('runs on the fallback only when GW_ALLOW_UWS_FALLBACK allows it, and says so', () => {
    const { uws, native } = loadUws(true, brokenBinary);
    assert.equal(native, false);
    assert.equal(uws as unknown, FALLBACK);
  });
});
