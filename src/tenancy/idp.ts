import { readFile } from 'node:fs/promises';
import { createLocalJWKSet, createRemoteJWKSet, errors as joseErrors, jwtVerify, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { GatewayError } from '../errors.js';

export interface IdpSettings {
  issuer: string;
  /** a JWKS file path, or an http(s) URL fetched (and refetched for unknown key ids) by jose */
  jwks: string;
  audience?: string;
  /** JSON object: IdP group → org_id (or an array of org_ids) */
  groupMap?: string;
}

/** Who an accepted IdP token speaks for. */
export interface IdpIdentity {
  subject: string;
  /** orgs its groups map to */
  orgs: readonly string[];
}

/** Asymmetric signatures only: a JWKS publishes public keys, never shared secrets. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
function parseGroupMap(text: string | undefined): Map<string, string[]> {
  const map = new Map<string, string[]>();
  if (text === undefined) return map;
  for (const [group, orgs] of Object.entries(JSON.parse(text) as Record<string, unknown>)) {
    const list = Array.isArray(orgs) ? orgs : [orgs];
    if (!list.every((o) => typeof o === 'string')) throw new Error(`GW_IDP_GROUP_MAP: group ${group} must map to an org_id or an array of them`);
    map.set(group, list as string[]);
  }
  return map;
}

/**
 * Corporate identity-provider tokens (docs/api.md, Identity-provider mode): a bearer JWT
 * verified with jose against the IdP's JWKS, issuer and (when set) audience,
 * with `exp` required. Its `groups` claim maps to orgs through
 * GW_IDP_GROUP_MAP. A refused token is 401 idp_authentication_error; an
 * accepted one whose groups map to no org is 403 idp_forbidden_error.
 */
export class IdpVerifier {
  private constructor(
    private readonly settings: IdpSettings,
    private readonly keys: JWTVerifyGetKey,
    private readonly groups: Map<string, string[]>,
  ) {}

  /** Reads a JWKS file once at start (a bad file stops start-up); a URL is fetched on first use. */
  static async create(settings: IdpSettings): Promise<IdpVerifier> {
    const groups = parseGroupMap(settings.groupMap);
    if (/^https?:\/\//.test(settings.jwks)) return new IdpVerifier(settings, createRemoteJWKSet(new URL(settings.jwks)), groups);
    let jwks: JSONWebKeySet;
    try {
      jwks = JSON.parse(await readFile(settings.jwks, 'utf8')) as JSONWebKeySet;
      if (!Array.isArray(jwks.keys)) throw new Error('no "keys" array');
    } catch (err) {
      throw new Error(`GW_IDP_JWKS: cannot read a JWKS from ${settings.jwks}: ${(err as Error).message}`, { cause: err });
    }
    return new IdpVerifier(settings, createLocalJWKSet(jwks), groups);
  }

  async verify(token: string): Promise<IdpIdentity> {
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, this.keys, {
        issuer: this.settings.issuer,
        audience: this.settings.audience,
        algorithms: ALGORITHMS,
        requiredClaims: ['exp'],
      }));
    } catch (err) {
      // the reason (expired, wrong issuer, bad signature) helps the caller; the token itself is never echoed
      const reason = err instanceof joseErrors.JOSEError ? err.code : 'unverifiable token';
      throw new GatewayError('idp_authentication_error', `identity-provider token refused: ${reason}`, { cause: err });
    }
    const subject = typeof payload['sub'] === 'string' ? payload['sub'] : '';
    const claim = payload['groups'];
    const groups = Array.isArray(claim) ? claim.filter((g): g is string => typeof g === 'string') : typeof claim === 'string' ? [claim] : [];
    const orgs = [...new Set(groups.flatMap((g) => this.groups.get(g) ?? []))];
    if (orgs.length === 0) throw new GatewayError('idp_forbidden_error', 'identity-provider token accepted, but none of its groups maps to an org');
    return { subject, orgs };
  }
}
