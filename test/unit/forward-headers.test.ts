import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { forwardHeaders, relayResponseHeaders } from '../../src/pipeline/forward-headers.js';

describe('forwardHeaders', () => {
  const incoming = {
    host: 'gw.example',
    'content-type': 'application/json',
    'content-length': '42',
    'transfer-encoding': 'chunked',
    connection: 'keep-alive, X-Private-Hop',
    'keep-alive': 'timeout=5',
    'x-private-hop': '1',
    te: 'trailers',
    trailer: 'x-t',
    upgrade: 'h2c',
    'proxy-authorization': 'Basic x',
    'proxy-connection': 'keep-alive',
    expect: '100-continue',
    'accept-encoding': 'gzip, br',
    authorization: 'Bearer gw_dev',
    'x-api-key': 'gw_dev',
    'api-key': 'gw_dev',
    'x-goog-api-key': 'gw_dev',
    cookie: 'a=b',
    'x-gw-key': 'gw_dev',
    'x-gw-provider-key': 'sk-live',
    'x-gw-session': 's1',
    'x-gw-whatever-new': '1',
    'x-forwarded-for': '10.0.0.1',
    forwarded: 'for=10.0.0.1',
    'openai-beta': 'assistants=v2',
    'x-stainless-retry-count': '0',
    'user-agent': 'OpenAI/JS 6',
  };

  it('sends only what describes the message: no hop-by-hop, x-gw-*, credentials or client addresses', () => {
    assert.deepEqual(forwardHeaders(incoming), {
      'content-type': 'application/json',
      'openai-beta': 'assistants=v2',
      'x-stainless-retry-count': '0',
      'user-agent': 'OpenAI/JS 6',
      'accept-encoding': 'identity',
    });
  });

  it('keeps a normally dropped header when the surface asks (parity relay credential)', () => {
    const out = forwardHeaders(incoming, ['x-api-key']);
    assert.equal(out['x-api-key'], 'gw_dev');
    assert.equal(out['authorization'], undefined);
  });

  it('never keeps an x-gw-* header or one the caller named in Connection', () => {
    const out = forwardHeaders(incoming, ['x-gw-provider-key', 'x-private-hop']);
    assert.equal(out['x-gw-provider-key'], undefined);
    assert.equal(out['x-private-hop'], undefined);
  });

  it('asks for an uncompressed reply, since replies are scanned for usage', () => {
    assert.equal(forwardHeaders({})['accept-encoding'], 'identity');
  });
});

describe('relayResponseHeaders', () => {
  it('drops framing and hop headers, expands repeated ones, keeps the vendor\'s own', () => {
    const out = relayResponseHeaders({
      'content-type': 'application/json',
      'content-length': '10',
      'transfer-encoding': 'chunked',
      connection: 'keep-alive',
      'keep-alive': 'timeout=5',
      date: 'x',
      server: 'cloudflare',
      'retry-after': '7',
      'x-request-id': 'req_1',
      'set-cookie': ['a=1', 'b=2'],
      'x-empty': undefined,
      // a vendor (or a proxy in front of it) must not speak for the gateway
      'x-gw-error': 'spoofed',
      'x-gw-request-id': 'spoofed',
      'x-gw-served-by': 'spoofed',
    });
    assert.deepEqual(out, [
      ['content-type', 'application/json'],
      ['retry-after', '7'],
      ['x-request-id', 'req_1'],
      ['set-cookie', 'a=1'],
      ['set-cookie', 'b=2'],
    ]);
  });
});
