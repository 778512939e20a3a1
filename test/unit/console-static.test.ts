import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CONSOLE_CSP, CONSOLE_FILES, consoleRoutes } from '../../src/api/console.js';
import { GatewayError } from '../../src/errors.js';
import type { GatewayRequest, HeaderList, ResponseSink } from '../../src/http/types.js';
import { Router } from '../../src/server/router.js';

/**
 * The console's static serving: a fixed allowlist answered from memory, with
 * the security and cache headers, and files that need nothing the policy
 * forbids (inline script or style, another origin).
 */

const DIR = fileURLToPath(new URL('../../src/console/', import.meta.url));
const router = new Router(consoleRoutes());

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** GET `path` through the console routes as the front would: the router, then the handler; a thrown error is the answer. */
function get(path: string, headers: Record<string, string> = {}): Answer | GatewayError {
  const match = router.match('GET', path);
  if (match.kind !== 'found') return new GatewayError('not_found', `no route for ${path}`);
  let answer: Answer | undefined;
  const res = {
    send(status: number, list: HeaderList, body: Uint8Array | string) {
      answer = { status, headers: Object.fromEntries(list), body: Buffer.from(body).toString('utf8') };
    },
  } as unknown as ResponseSink;
  const req = { method: 'GET', path, query: '', headers, params: match.params, body: Buffer.alloc(0) } as unknown as GatewayRequest;
  try {
    void match.route.handler(req, res);
  } catch (err) {
    return err as GatewayError;
  }
  assert.ok(answer, `${path}: no answer`);
  return answer;
}

const ok = (path: string, headers?: Record<string, string>): Answer => {
  const a = get(path, headers);
  assert.ok(!(a instanceof Error), `${path}: ${a instanceof Error ? a.message : ''}`);
  return a;
};

describe('console static files', () => {
  it('the allowlist is exactly the files of src/console/', () => {
    assert.deepEqual(readdirSync(DIR).sort(), Object.keys(CONSOLE_FILES).sort());
  });

  it('GET /console is the page; each allowlisted file is served with its content type', () => {
    const page = ok('/console');
    assert.equal(page.status, 200);
    assert.equal(page.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(page.body, readFileSync(join(DIR, 'index.html'), 'utf8'));
    for (const [name, type] of Object.entries(CONSOLE_FILES)) {
      const a = ok(`/console/${name}`);
      assert.equal(a.status, 200, name);
      assert.equal(a.headers['content-type'], type, name);
      assert.equal(a.body, readFileSync(join(DIR, name), 'utf8'), name);
    }
    assert.match(CONSOLE_FILES['app.js'] ?? '', /^text\/javascript/);
    assert.match(CONSOLE_FILES['console.css'] ?? '', /^text\/css/);
  });

  it('every file carries a strict Content-Security-Policy and the other security headers', () => {
    for (const name of Object.keys(CONSOLE_FILES)) {
      const { headers } = ok(`/console/${name}`);
      assert.equal(headers['content-security-policy'], CONSOLE_CSP, name);
      assert.equal(headers['x-content-type-options'], 'nosniff', name);
      assert.equal(headers['referrer-policy'], 'no-referrer', name);
      assert.equal(headers['x-frame-options'], 'DENY', name);
    }
    const directives = new Map(CONSOLE_CSP.split('; ').map((d) => [d.split(' ')[0], d.split(' ').slice(1)]));
    assert.deepEqual(directives.get('default-src'), ["'none'"]);
    for (const d of ['script-src', 'style-src', 'connect-src', 'img-src']) assert.deepEqual(directives.get(d), ["'self'"], d);
    assert.deepEqual(directives.get('frame-ancestors'), ["'none'"]);
    assert.deepEqual(directives.get('form-action'), ["'none'"]);
    assert.ok(!/unsafe-|\*|https?:|data:/.test(CONSOLE_CSP), CONSOLE_CSP);
  });

  it('is revalidated on every use (no-cache, ETag) and answers 304 without a body while the ETag matches', () => {
    const first = ok('/console/app.js');
    assert.equal(first.headers['cache-control'], 'no-cache');
    const etag = first.headers['etag'] ?? '';
    assert.match(etag, /^"[\w-]{22}"$/);
    const again = ok('/console/app.js', { 'if-none-match': etag });
    assert.equal(again.status, 304);
    assert.equal(again.body, '');
    assert.equal(again.headers['etag'], etag);
    assert.equal(again.headers['content-security-policy'], CONSOLE_CSP);
    assert.equal(ok('/console/app.js', { 'if-none-match': `"other", ${etag}` }).status, 304);
    assert.equal(ok('/console/app.js', { 'if-none-match': '"other"' }).status, 200);
    assert.notEqual(ok('/console/api.js').headers['etag'], etag, 'each file its own ETag');
  });

  it('refuses every name outside the allowlist, traversal and encodings included, as 404', () => {
    const refused = [
      '/console/../package.json',
      '/console/..%2Fpackage.json',
      '/console/%2e%2e%2fsrc%2fmain.ts',
      '/console/..%5c..%5cpackage.json',
      '/console/./app.js',
      '/console/app.js/',
      '/console/app.js%00',
      '/console/app.js%00.png',
      '/console/APP.JS',
      '/console/%61pp.js',
      '/console/.env',
      '/console/__proto__',
      '/console/constructor',
      '/console/hasOwnProperty',
      '/console/',
      '/console/console/app.js',
      '/console/../api/console.ts',
      '/console/api.ts',
    ];
    for (const path of refused) {
      const a = get(path);
      assert.ok(a instanceof GatewayError, `${path} answered ${a instanceof GatewayError ? '' : a.status}`);
      assert.equal(a.type, 'not_found', path);
    }
  });
});

describe('console files need nothing the policy forbids', () => {
  const text = (name: string) => readFileSync(join(DIR, name), 'utf8');
  const modules = Object.keys(CONSOLE_FILES).filter((n) => n.endsWith('.js'));

  it('the page loads only allowlisted files, by absolute /console/ paths, and has no inline script, style or handler', () => {
    const html = text('index.html');
    const refs = [...html.matchAll(/(?:src|href)="([^"#]+)"/g)].map((m) => m[1] as string);
    assert.ok(refs.length >= 3, JSON.stringify(refs));
    for (const ref of refs) {
      assert.match(ref, /^\/console\//, ref);
      assert.ok(CONSOLE_FILES[ref.slice('/console/'.length)], `${ref} is allowlisted`);
    }
    assert.ok(!/<script(?![^>]*\bsrc=)[^>]*>/i.test(html), 'no inline script');
    assert.ok(!/<style|\sstyle=|\son[a-z]+=/i.test(html), 'no inline style or event handler attribute');
  });

  it('modules import only allowlisted modules, reach no other origin and never parse HTML or code', () => {
    for (const name of modules) {
      const src = text(name);
      for (const [, spec] of src.matchAll(/from\s+'([^']+)'/g)) {
        assert.match(spec as string, /^\.\/[\w-]+\.js$/, `${name} imports ${spec}`);
        assert.ok(CONSOLE_FILES[(spec as string).slice(2)], `${name} imports ${spec}, which is not allowlisted`);
      }
      assert.deepEqual([...src.matchAll(/https?:\/\/[^\s'"`]+/g)].map((m) => m[0]).filter((u) => u !== 'http://www.w3.org/2000/svg'), [], `${name} names another origin`);
      assert.ok(!/innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\('style'|localStorage|document\.cookie/.test(src), `${name} uses an API the console does without`);
    }
  });
});
