import { upstreamQuery } from '../http/query.js';
import { GatewayError } from '../errors.js';
import type { ProviderCredential, ProviderId, StreamUsageReader, UpstreamRequest, Usage } from './types.js';

/** Where a call goes, for providers whose origin depends on it. */
export interface Location {
  /** cloudx resource origin, e.g. https://myres.openai.azure.com */
  endpoint?: string;
  /** cloudy region */
  region?: string;
  /** genvendor_vertex */
  project?: string;
  location?: string;
}

/**
 * How a provider takes a stored credential (`/api/v1/vendor_key/create`):
 * its kinds, the first being the default, and the location fields it needs.
 */
export interface StoredCredentialRule {
  kinds: Readonly<Record<string, { scheme: ProviderCredential['scheme']; secret: RegExp; shape: string }>>;
  location: readonly (keyof Location)[];
}

/** printable ASCII without spaces: anything else could break a header */
const PRINTABLE = /^[\x21-\x7e]{1,8192}$/;
/** a key of printable characters, riding as `scheme` */
export const printableKey = (scheme: ProviderCredential['scheme']) => ({ scheme, secret: PRINTABLE, shape: 'a key of printable characters' });

/**
 * What a caller asked a vendor for, in the terms surfaces and translators
 * know; the provider turns it into its own path (and, where its rules say
 * so, its own body).
 */
export type Operation =
  /** the vendor's own path and query as the caller addressed it (cloudx paths, the parity relay, the Responses API) */
  | { op: 'vendor_path'; path: string }
  | { op: 'chat_completions' }
  | { op: 'responses'; query: string }
  /** a Messages API call; `parsed` is the caller's body, for a host whose rules rewrite it (absent: that host is not served) */
  | { op: 'messages'; model: string; stream: boolean; query: string; parsed?: Record<string, unknown> }
  | { op: 'count_tokens'; model: string; query: string; parsed?: Record<string, unknown> }
  /** `query` is raw, without its `?` ('' for none) */
  | { op: 'generate_content'; model: string; stream: boolean; query: string }
  | { op: 'converse'; model: string; stream: boolean };

export type OperationKind = Operation['op'];

/** Where an operation goes on one vendor. */
export interface Addressed {
  /** the vendor's path and query; a function when it depends on the resolved location (a stored key's project) */
  path: string | ((location: Location) => string);
  /** the body the vendor's rules require in place of the caller's (Claude on Vertex), if any */
  body?: Buffer;
}

/** What a request body asks the vendor to produce, for the spend cap's worst case. */
export interface RequestedOutput {
  /** the output-token limit the body sets, if any */
  maxTokens: number | undefined;
  /** how many choices it asks for */
  choices: number;
}

/**
 * One vendor, as pure functions: no I/O, no settings reads. Bytes and
 * credentials in, a request out; reply bytes in, usage out.
 */
export interface ProviderAdapter {
  readonly id: ProviderId;
  /** how it takes a stored credential */
  readonly storedCredential: StoredCredentialRule;
  /** where a call goes when neither the caller nor a stored key says (so residency rules see it too) */
  readonly defaultLocation?: Location;
  /** the vendor's public origin for this location */
  publicOrigin(loc: Location): string;
  /** the location a caller names with this vendor's headers (x-gw-aws-region …), unchecked */
  readLocation?(headers: Readonly<Record<string, string>>): Location | undefined;
  /** refuses (400) a location that could name anything but this vendor's hosts and paths */
  checkLocation?(loc: Location): void;
  /** the vendor path of what the caller asked for, or undefined when this vendor does not serve it */
  address(op: Operation): Addressed | undefined;
  /** the output limit and choices a parsed request body in this vendor's format asks for */
  requestedOutput(body: unknown): RequestedOutput;
  /** attaches the credential; may sign the whole request */
  authorize(req: UpstreamRequest, cred: ProviderCredential, loc: Location): Promise<UpstreamRequest> | UpstreamRequest;
  /** usage of a whole JSON reply */
  usageFromJson(reply: unknown): Usage | undefined;
  /** usage of a streamed reply, read incrementally */
  streamUsage(): StreamUsageReader;
}

/**
 * The request with `name: value` among its headers: a copy by Object.assign
 * with the header set on it, not a spread with the header added (a property
 * added to a spread's copy takes V8's slow path, about 1 µs a request).
 */
export function withHeader(req: UpstreamRequest, name: string, value: string): UpstreamRequest {
  const headers: Record<string, string> = Object.assign({}, req.headers);
  headers[name] = value;
  return { origin: req.origin, path: req.path, method: req.method, headers, body: req.body };
}

/** A model name that can sit in a vendor path as one segment: no `/`, no `..`, nothing that could reshape the path. */
export const isModelPathSegment = (model: string): boolean => /^[A-Za-z0-9][A-Za-z0-9._@-]*$/.test(model);

/** A model name as one vendor path segment, or a 400 naming the field. */
export function modelSegment(model: string, field = 'model'): string {
  if (!isModelPathSegment(model)) throw new GatewayError('request_error', `${field}: not a model name: ${JSON.stringify(model)}`, { fields: { field } });
  return model;
}

/** `path?query` as the caller sent it. */
/** `path?query` with the caller's query minus any developer key, however spelled (a `gw_` value never goes upstream). */
export function withQuery(path: string, query: string): string {
  const kept = upstreamQuery(query);
  return kept === '' ? path : `${path}?${kept}`;
}

function numberAt(doc: unknown, path: readonly string[]): number | undefined {
  let v: unknown = doc;
  for (const k of path) v = typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>)[k] : undefined;
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined;
}

/** the largest value any of `paths` names in the parsed body */
const largestAt = (doc: unknown, paths: readonly (readonly string[])[]): number | undefined =>
  paths.reduce<number | undefined>((best, p) => {
    const v = numberAt(doc, p);
    return v !== undefined && (best === undefined || v > best) ? v : best;
  }, undefined);

/** A reader of the output limit and choice count at the places a vendor's format names them. */
export const outputReader =
  (limitPaths: readonly (readonly string[])[], choicePaths: readonly (readonly string[])[] = []) =>
  (body: unknown): RequestedOutput => ({ maxTokens: largestAt(body, limitPaths), choices: largestAt(body, choicePaths) ?? 1 });
