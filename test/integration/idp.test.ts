import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { devKeySecret, startTestGateway, type Bootstrap, type TestGateway } from '../helpers/gateway.js';
import { scratchDir } from '../helpers/scratch.js';

const ISSUER = 'https://idp.example.test/';
const AUDIENCE = 'model-gateway';
const GROUP_MAP = JSON.stringify({ eng: 'acme', finance: ['acme', 'other'], ghosts: 'no-such-org' });
const ACME = devKeySecret('idp-acme');
const BOOT: Bootstrap = {
  orgs: [{ org_id: 'acme' }, { org_id: 'other' }, { org_id: 'third' }],
  dev_keys: [{ org_id: 'acme', dev_key_id: 'dk-acme', api_key: ACME }],
};

async function call(gw: TestGateway, path: string, token: string | undefined, body?: unknown) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
  const res = await fetch(`${gw.url}${path}`, { method: body === undefined ? 'GET' : 'POST', headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: (text === '' ? {} : JSON.parse(text)) as Record<string, unknown> };
}

interface Signer {
  key: CryptoKey;
  kid: string;
}

const sign = (s: Signer, claims: Record<string, unknown>, opts: { issuer?: string; audience?: string; expires?: string | number } = {}) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256', kid: s.kid })
    .setSubject('user@example.test')
    .setIssuer(opts.issuer ?? ISSUER)
    .setAudience(opts.audience ?? AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(opts.expires ?? '5m')
    .sign(s.key);

async function newSigner(kid: string): Promise<{ signer: Signer; jwk: JWK }> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  return { signer: { key: privateKey, kid }, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

/** The same suite with the JWKS as a file and as a URL, on each store implementation. */
for (const [source, redis] of [['file', false], ['url', false], ['file', true], ['url', true]] as const) {
  describe(`identity-provider tokens (JWKS ${source}, ${redis ? 'redis' : 'embedded'} store)`, () => {
    let gw: TestGateway;
    let idp: Signer;
    let stranger: Signer;
    let jwksServer: Server | undefined;

    before(async () => {
      const trusted = await newSigner('trusted-1');
      idp = trusted.signer;
      stranger = (await newSigner('trusted-1')).signer;
      const jwks = JSON.stringify({ keys: [trusted.jwk] });
      let location: string;
      if (source === 'file') {
        location = join(scratchDir('gw-idp-'), 'jwks.json');
        await writeFile(location, jwks);
      } else {
        jwksServer = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(jwks));
        await new Promise<void>((r) => jwksServer?.listen(0, '127.0.0.1', r));
        location = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/.well-known/jwks.json`;
      }
      gw = await startTestGateway({ redis, bootstrap: BOOT, env: { GW_IDP_ISSUER: ISSUER, GW_IDP_JWKS: location, GW_IDP_AUDIENCE: AUDIENCE, GW_IDP_GROUP_MAP: GROUP_MAP } });
    });
    after(async () => {
      await gw.close();
      jwksServer?.close();
    });

    it('an accepted token acts for the org its group maps to, on self-service routes', async () => {
      const token = await sign(idp, { groups: ['eng'] });
      const settings = await call(gw, '/api/v1/settings', token);
      assert.equal(settings.status, 200);
      assert.equal(settings.json['org_id'], 'acme');
      assert.equal((await call(gw, '/api/v1/model_access/update', token, { models: ['gpt-4o'] })).status, 200);
      assert.deepEqual((await call(gw, '/api/v1/settings', ACME)).json['model_access'], { models: ['gpt-4o'] }, 'the same org the developer key sees');
    });

    it('a token mapping to several orgs names one with tenant_id; one outside its groups is 403 idp_forbidden_error', async () => {
      const token = await sign(idp, { groups: ['finance'] });
      const ambiguous = await call(gw, '/api/v1/settings', token);
      assert.equal(ambiguous.status, 400);
      assert.equal((await call(gw, '/api/v1/settings?tenant_id=other', token)).json['org_id'], 'other');
      const outside = await call(gw, '/api/v1/settings?tenant_id=third', token);
      assert.equal(outside.status, 403);
      assert.equal(outside.headers.get('x-gw-error'), 'idp_forbidden_error');
    });

    it('accepted but no group mapping (or a mapping to no existing org) is 403 idp_forbidden_error', async () => {
      for (const claims of [{ groups: ['marketing'] }, {}, { groups: 'ghosts' }]) {
        const r = await call(gw, '/api/v1/settings', await sign(idp, claims));
        assert.equal(r.status, 403, JSON.stringify(claims));
        assert.equal(r.headers.get('x-gw-error'), 'idp_forbidden_error');
        assert.equal((r.json['error'] as Record<string, unknown>)['type'], 'idp_forbidden_error');
      }
    });

    it('a refused token is 401 idp_authentication_error: expired, wrong issuer, wrong audience, foreign signature, not a JWT, no exp', async () => {
      const noExp = await new SignJWT({ groups: ['eng'] }).setProtectedHeader({ alg: 'ES256', kid: idp.kid }).setIssuer(ISSUER).setAudience(AUDIENCE).sign(idp.key);
      const refused = [
        await sign(idp, { groups: ['eng'] }, { expires: Math.floor(Date.now() / 1000) - 60 }),
        await sign(idp, { groups: ['eng'] }, { issuer: 'https://evil.example/' }),
        await sign(idp, { groups: ['eng'] }, { audience: 'someone-else' }),
        await sign(stranger, { groups: ['eng'] }),
        'not-a-jwt',
        noExp,
      ];
      for (const token of refused) {
        const r = await call(gw, '/api/v1/settings', token);
        assert.equal(r.status, 401, token.slice(0, 20));
        assert.equal(r.headers.get('x-gw-error'), 'idp_authentication_error');
        assert.equal(JSON.stringify(r.json).includes(token), false, 'the token is never echoed');
      }
    });

    it('skill routes take the token for its org; relays need a developer key', async () => {
      const token = await sign(idp, { groups: ['eng'] });
      assert.equal((await call(gw, '/api/v1/tenant/acme/skills/pii_redaction/lifecycle', token, { key_id: 'dk-acme', mode: 'shadow' })).status, 200);
      const foreign = await call(gw, '/api/v1/tenant/other/skills/pii_redaction/lifecycle', token, { key_id: 'dk-acme', mode: 'shadow' });
      assert.equal(foreign.status, 403);
      assert.equal(foreign.headers.get('x-gw-error'), 'idp_forbidden_error');
      const relay = await call(gw, '/v1/chat/completions', token, { model: 'gpt-4o', messages: [] });
      assert.equal(relay.status, 401);
      assert.equal(relay.headers.get('x-gw-error'), 'invalid_developer_key');
    });

    it('developer keys keep working beside the identity provider', async () => {
      assert.equal((await call(gw, '/api/v1/settings', ACME)).status, 200);
      assert.equal((await call(gw, '/api/v1/settings', devKeySecret('unknown'))).status, 401);
    });
  });
}

describe('identity-provider settings', () => {
  it('a JWKS file that cannot be read stops start-up naming GW_IDP_JWKS', async () => {
    await assert.rejects(
      startTestGateway({ env: { GW_IDP_ISSUER: ISSUER, GW_IDP_JWKS: '/nonexistent/jwks.json' } }),
      /GW_IDP_JWKS/,
    );
  });

  it('without GW_IDP_ISSUER a bearer JWT is just an unknown key (401 invalid_developer_key)', async () => {
    const gw = await startTestGateway({ bootstrap: BOOT });
    try {
      const { signer } = await newSigner('k');
      const r = await call(gw, '/api/v1/settings', await sign(signer, { groups: ['eng'] }));
      assert.equal(r.status, 401);
      assert.equal(r.headers.get('x-gw-error'), 'invalid_developer_key');
    } finally {
      await gw.close();
    }
  });
});
