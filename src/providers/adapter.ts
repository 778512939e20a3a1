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
 * One vendor, as pure functions: no I/O, no settings reads. Bytes and
 * credentials in, a request out; reply bytes in, usage out.
 */
export interface ProviderAdapter {
  readonly id: ProviderId;
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
