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
  /** attaches the credential; may sign the whole request */
  authorize(req: UpstreamRequest, cred: ProviderCredential, loc: Location): Promise<UpstreamRequest> | UpstreamRequest;
  /** usage of a whole JSON reply */
  usageFromJson(reply: unknown): Usage | undefined;
  /** usage of a streamed reply, read incrementally */
  streamUsage(): StreamUsageReader;
}

/** A model name that can sit in a vendor path as one segment: no `/`, no `..`, nothing that could reshape the path. */
export const isModelPathSegment = (model: string): boolean => /^[A-Za-z0-9][A-Za-z0-9._@-]*$/.test(model);
