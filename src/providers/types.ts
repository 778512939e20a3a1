/** The vendors: a public origin each, reached with the caller's or a stored credential. */
export type VendorId = 'openai' | 'cloudx' | 'msgvendor' | 'genvendor' | 'genvendor_vertex' | 'cloudy';
/** Every provider: the vendors and `selfhosted`, the operator's own model servers (GW_DESTINATIONS_FILE). */
export type ProviderId = VendorId | 'selfhosted';

export const PROVIDER_IDS: readonly VendorId[] = ['openai', 'cloudx', 'msgvendor', 'genvendor', 'genvendor_vertex', 'cloudy'];

export interface Usage {
  /** the whole prompt: plain, read from the vendor's cache, and written to it */
  input_tokens: number;
  output_tokens: number;
  /** prompt tokens read from the vendor's prompt cache */
  cached_tokens: number;
  /** prompt tokens written to the vendor's prompt cache (billed at the catalog's cache-write price) */
  cache_write_tokens?: number;
  /** the reply did not say how much of the prompt came from the cache (an OpenAI-compatible server without `prompt_tokens_details`): `cached_tokens` is 0 for want of a figure */
  cache_unreported?: true;
  /** the model the reply says served it, where the format carries one (an Azure deployment's real model) */
  model?: string;
}

/** A request ready for the wire. Providers build these; upstream/ sends them. */
export interface UpstreamRequest {
  origin: string;
  path: string;
  method: 'POST' | 'GET';
  headers: Record<string, string>;
  body: Buffer | undefined;
}

/** The reply text of a stream as far as the gateway kept it: a bounded sample and the whole length. */
export interface StreamedTextSample {
  text: string;
  /** characters of reply text the stream carried, kept or not */
  chars: number;
}

/** Reads usage out of a streamed reply, one chunk at a time, without buffering it whole. */
export interface StreamUsageReader {
  push(chunk: Buffer): void;
  usage(): Usage | undefined;
  /** the reply text met so far (bounded), for counting a stream that ends without usage (once usage was read, a long stream's text may no longer be kept) */
  streamedText(): StreamedTextSample;
}

/** A credential for one provider, pass-through or stored. */
export interface ProviderCredential {
  /** the secret as the provider takes it (API key, bearer token, or packed access-key pair) */
  secret: string;
  /** how it rides: most providers have one way; cloudx has api-key or a directory bearer */
  scheme: 'api_key' | 'bearer' | 'aws_sigv4';
  source: 'pass_through' | 'stored';
}
