import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { GatewayError } from '../errors.js';
import { outputReader, printableKey, type Location, type ProviderAdapter } from './adapter.js';
import type { UpstreamRequest } from './types.js';
import { converseStreamUsage, converseUsage } from './usage/converse.js';

export const DEFAULT_AWS_REGION = 'us-east-1';

/** us-east-1, eu-central-1, ap-southeast-2, us-gov-west-1 …: only ever a label inside the Bedrock hostname */
const AWS_REGION = /^[a-z]{2}(?:-[a-z]+)+-[0-9]{1,2}$/;
export const isAwsRegion = (region: string): boolean => AWS_REGION.test(region);

/** ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN]; ids are upper-case alphanumerics, short ones such as AWS's own test id AKIDEXAMPLE included */
const ACCESS_KEY_PAIR = /^[A-Z0-9]{4,128}:[^:\s]{1,256}(?::[^:\s]{1,4096})?$/;
export const isAccessKeyPair = (secret: string): boolean => ACCESS_KEY_PAIR.test(secret);

/** Caller headers that belong to a signature of the caller's own and must not leak into ours. */
const CALLER_SIGNING_HEADERS = ['authorization', 'x-amz-date', 'x-amz-security-token', 'x-amz-content-sha256'];

/**
 * THE check of an AWS region, whoever named it (x-gw-aws-region, a stored
 * key): it becomes a hostname label and a signing scope, so nothing else may pass.
 */
function checkedRegion(region: string): string {
  if (!isAwsRegion(region)) throw new GatewayError('request_error', `not an AWS region: ${JSON.stringify(String(region).slice(0, 64))} (x-gw-aws-region, or the stored key's region)`, { fields: { field: 'x-gw-aws-region' } });
  return region;
}

/** The Bedrock path segment of a model id, encoded as the AWS SDKs encode it (`:` as %3A, an ARN's `/` as %2F). */
/** RFC 3986 component encoding; a dot segment (`.`, `..`, which the component encoding leaves as it is) encoded too, so no model id moves the vendor path */
const encodeModelId = (modelId: string): string =>
  modelId === '.' || modelId === '..' ? modelId.replaceAll('.', '%2E') : encodeURIComponent(modelId).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** The caller's headers without the parts of a signature of its own (the gateway attaches the credential). */
function withoutCallerSignature(headers: Record<string, string>): Record<string, string> {
  const out = { ...headers };
  for (const h of CALLER_SIGNING_HEADERS) delete out[h];
  return out;
}

async function signV4(req: UpstreamRequest, secret: string, region: string): Promise<UpstreamRequest> {
  const [accessKeyId = '', secretAccessKey = '', sessionToken] = secret.split(':');
  const url = new URL(req.origin);
  const headers: Record<string, string> = { ...withoutCallerSignature(req.headers), host: url.host };
  const q = req.path.indexOf('?');
  const signer = new SignatureV4({ service: 'bedrock', region, credentials: { accessKeyId, secretAccessKey, sessionToken }, sha256: Sha256 });
  const signed = await signer.sign(
    new HttpRequest({
      method: req.method,
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port === '' ? undefined : Number(url.port),
      path: q === -1 ? req.path : req.path.slice(0, q),
      query: q === -1 ? {} : Object.fromEntries(new URLSearchParams(req.path.slice(q + 1))),
      headers,
      body: req.body,
    }),
  );
  return { ...req, headers: signed.headers };
}

/**
 * Bedrock Runtime: `https://bedrock-runtime.{region}.amazonaws.com`. The
 * cloud's API key rides as a bearer; an access-key pair signs the request
 * with SigV4 (service `bedrock`).
 */
export const cloudy: ProviderAdapter = {
  id: 'cloudy',
  storedCredential: {
    kinds: {
      access_key: { scheme: 'aws_sigv4', secret: ACCESS_KEY_PAIR, shape: 'the packed pair ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN]' },
      api_key: printableKey('bearer'),
    },
    location: ['region'],
  },
  defaultLocation: { region: DEFAULT_AWS_REGION },
  publicOrigin(loc) {
    return `https://bedrock-runtime.${checkedRegion(loc.region ?? DEFAULT_AWS_REGION)}.amazonaws.com`;
  },
  readLocation(headers): Location | undefined {
    const region = headers['x-gw-aws-region'];
    return region === undefined ? undefined : { region };
  },
  checkLocation(loc) {
    if (loc.region !== undefined) checkedRegion(loc.region);
  },
  address(op) {
    if (op.op !== 'converse') return undefined;
    return { path: `/model/${encodeModelId(op.model)}/${op.stream ? 'converse-stream' : 'converse'}` };
  },
  requestedOutput: outputReader([['inferenceConfig', 'maxTokens']]),
  authorize(req, cred, loc) {
    // a stored key says what it is; x-gw-provider-key (scheme api_key) carries either, told apart by shape
    const pair = cred.scheme === 'aws_sigv4' || (cred.scheme === 'api_key' && isAccessKeyPair(cred.secret));
    if (!pair) return { ...req, headers: { ...withoutCallerSignature(req.headers), authorization: `Bearer ${cred.secret}` } };
    if (!isAccessKeyPair(cred.secret)) throw new GatewayError('request_error', 'the cloudy access-key pair must read ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN]');
    return signV4(req, cred.secret, loc.region ?? DEFAULT_AWS_REGION);
  },
  usageFromJson: converseUsage,
  streamUsage: converseStreamUsage,
};
