import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CONSOLE_CSP } from '../../src/api/console.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { firstStatus, headerOf, rawExchange } from '../helpers/raw-http.js';

/**
 * The console's files on the wire, through the real front: request targets
 * are written raw on a socket, so no client normalizes a `..` away first.
 */
describe('GET /console on the wire', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(() => gw.close());

  const raw = (target: string, headers = '', method = 'GET') =>
    rawExchange(gw.port, `${method} ${target} HTTP/1.1\r\nhost: gw\r\n${headers}\r\n`, { until: (t) => t.includes('\r\n\r\n') && (method === 'HEAD' || /\r\n\r\n[\s\S]*$/.test(t)), waitMs: 1000 });

  it('serves the page and its modules with the policy, the content type and no-cache; HEAD alike without a body', async () => {
    const page = await fetch(`${gw.url}/console`);
    assert.equal(page.status, 200);
    assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(page.headers.get('content-security-policy'), CONSOLE_CSP);
    assert.equal(page.headers.get('cache-control'), 'no-cache');
    assert.match(await page.text(), /<script type="module" src="\/console\/app\.js"><\/script>/);
    const head = await fetch(`${gw.url}/console/app.js`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.equal(await head.text(), '');
  });

  it('answers 304 to the ETag it gave, and the connection serves the next request', async () => {
    const etag = (await fetch(`${gw.url}/console/console.css`)).headers.get('etag');
    assert.ok(etag);
    const r = await rawExchange(gw.port, `GET /console/console.css HTTP/1.1\r\nhost: gw\r\nif-none-match: ${etag}\r\n\r\nGET /livez HTTP/1.1\r\nhost: gw\r\n\r\n`, { until: (t) => t.includes('{"status":"ok"}') });
    assert.equal(firstStatus(r.text), 304);
    assert.equal(headerOf(r.text, 'etag'), etag);
    assert.match(r.text, /\r\n\r\nHTTP\/1\.1 200 OK\r\n[\s\S]*\{"status":"ok"\}$/, 'no body after the 304: the next answer follows at once');
  });

  it('refuses raw traversal targets with the JSON 404 and serves nothing else', async () => {
    for (const target of ['/console/../package.json', '/console/..%2F..%2Fpackage.json', '/console/%2e%2e/src/main.ts', '/console/../../../../etc/passwd', '/console//etc/passwd', '/console/.%2e/package.json']) {
      const r = await raw(target);
      assert.equal(firstStatus(r.text), 404, `${target}: ${r.text.slice(0, 120)}`);
      assert.equal(headerOf(r.text, 'x-gw-error'), 'not_found', target);
      assert.equal(headerOf(r.text, 'content-type'), 'application/json', target);
      assert.ok(!r.text.includes('"name": "model-gateway"') && !r.text.includes('root:'), target);
    }
  });

  it('takes GET and HEAD only', async () => {
    const r = await fetch(`${gw.url}/console/app.js`, { method: 'POST', body: 'x' });
    assert.equal(r.status, 405);
    assert.equal(r.headers.get('allow'), 'GET');
  });
});
