import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Route } from '../../src/http/types.js';
import { Router } from '../../src/server/router.js';
import { SURFACES } from '../../src/surfaces/index.js';

const route = (method: Route['method'], path: string): Route => ({ method, path, surface: SURFACES.public, handler: () => undefined });

describe('Router', () => {
  const routes = [
    route('GET', '/healthz'),
    route('POST', '/v1/chat/completions'),
    route('GET', '/v1/chat/completions'),
    route('POST', '/genvendor/v1beta/models/:model'),
    route('POST', '/cloudy/model/:modelId/converse'),
    route('POST', '/files/v-:version.json'),
    route('POST', '/cloudx/compat/*'),
  ];
  const router = new Router(routes);

  it('finds exact paths by method', () => {
    const hit = router.match('POST', '/v1/chat/completions');
    assert.equal(hit.kind, 'found');
    assert.equal(hit.kind === 'found' && hit.route, routes[1]);
    assert.deepEqual(hit.kind === 'found' && hit.params, {});
  });

  it('names the allowed methods on a known path with another method', () => {
    assert.deepEqual(router.match('DELETE', '/v1/chat/completions'), { kind: 'method_not_allowed', allowed: ['POST', 'GET'] });
    assert.deepEqual(router.match('GET', '/cloudx/compat/x'), { kind: 'method_not_allowed', allowed: ['POST'] });
  });

  it('captures whole-segment parameters raw, colon suffixes included', () => {
    const hit = router.match('POST', '/genvendor/v1beta/models/gemini-2.5-pro:generateContent');
    assert.equal(hit.kind, 'found');
    assert.deepEqual(hit.kind === 'found' && hit.params, { model: 'gemini-2.5-pro:generateContent' });
    const enc = router.match('POST', '/cloudy/model/arn%3Aaws%3Abedrock%2Fx/converse');
    assert.deepEqual(enc.kind === 'found' && enc.params, { modelId: 'arn%3Aaws%3Abedrock%2Fx' });
  });

  it('a parameter never spans a slash', () => {
    assert.equal(router.match('POST', '/cloudy/model/a/b/converse').kind, 'not_found');
    assert.equal(router.match('POST', '/genvendor/v1beta/models/').kind, 'not_found');
  });

  it('matches a parameter inside a segment and treats other pattern characters literally', () => {
    const hit = router.match('POST', '/files/v-12.json');
    assert.deepEqual(hit.kind === 'found' && hit.params, { version: '12' });
    assert.equal(router.match('POST', '/files/v-12xjson').kind, 'not_found');
  });

  it('a trailing * takes the rest of the path', () => {
    const hit = router.match('POST', '/cloudx/compat/openai/deployments/d1/chat/completions');
    assert.deepEqual(hit.kind === 'found' && hit.params, { '*': 'openai/deployments/d1/chat/completions' });
  });

  it('unknown paths are not found, including near misses', () => {
    for (const p of ['/nope', '/healthz/', '/HEALTHZ', '/v1/chat/completions/extra', '']) assert.equal(router.match('GET', p).kind === 'found', false, p);
    assert.equal(router.match('GET', '/nope').kind, 'not_found');
  });
});
