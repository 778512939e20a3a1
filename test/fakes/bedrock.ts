import type { ServerResponse } from 'node:http';
import { Sha256 } from '@aws-crypto/sha256-js';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { cacheScriptOf } from './cache-script.js';
import { scriptOf, writeScriptedStream } from './scripted-stream.js';
import { sendJson, sleep, startFakeVendor, type FakeVendor, type Recorded } from './server.js';

/** What the fake concluded about the SigV4 signature of one request. */
export interface SignatureCheck {
  url: string;
  accessKeyId: string;
  region: string;
  signedHeaders: string[];
  valid: boolean;
}

export interface FakeBedrock extends FakeVendor {
  /** one entry per SigV4-signed request received, in order */
  signatures: SignatureCheck[];
}

const codec = new EventStreamCodec(toUtf8, fromUtf8);

const ERROR_TYPE: Record<number, string> = { 400: 'ValidationException', 403: 'AccessDeniedException', 404: 'ResourceNotFoundException', 408: 'ModelTimeoutException', 429: 'ThrottlingException', 500: 'InternalServerException', 503: 'ServiceUnavailableException' };

/** The error Bedrock sends: the AWS name on x-amzn-errortype (with its Coral suffix) and `{message}`. */
export function sendAwsError(res: ServerResponse, status: number, message: string, type = ERROR_TYPE[status] ?? 'InternalServerException'): void {
  sendJson(res, status, { message }, { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, 'x-amzn-requestid': 'fake-req-err' });
}

/**
 * A fake Bedrock Runtime speaking Converse (JSON) and ConverseStream (binary
 * application/vnd.amazon.eventstream frames with valid CRCs). It verifies every
 * SigV4 signature it receives by recomputing it with @smithy/signature-v4
 * from `credentials` (access key id → secret); a bad signature is the 403
 * Bedrock answers. Behaviour is scripted by the model id:
 * - `error_<status>`: the AWS error for that status
 * - `truncated`: 200 with a body cut mid-JSON
 * - `slow_<ms>`: waits before answering
 * - `stall_stream`: streams one frame, then goes silent
 * - `break_stream`: streams two frames, then drops the connection
 * - a catalog id ending in `-error_<status>` or `-<script>` behaves like the bare script (a call routed here by translation)
 * - an id ending in `-tool_use`: the reply calls `get_weather` (stopReason `tool_use`)
 * - an id ending in `-cache_<read>_<written>`: usage with those cache reads and writes (./cache-script.ts)
 */
export async function startFakeBedrock(credentials: Record<string, string> = {}): Promise<FakeBedrock> {
  const signatures: SignatureCheck[] = [];
  const fake = await startFakeVendor(async (req, res) => {
    const m = /^\/model\/([^/]+)\/(converse|converse-stream)$/.exec(req.url);
    if (!m) return sendAwsError(res, 404, `Unknown operation ${req.url}`, 'UnknownOperationException');
    const auth = req.headers['authorization'] ?? '';
    if (auth.startsWith('AWS4-HMAC-SHA256 ')) {
      const check = await verifySigV4(req, credentials);
      signatures.push(check);
      if (!check.valid) return sendAwsError(res, 403, 'The request signature we calculated does not match the signature you provided.', 'InvalidSignatureException');
    } else if (!/^Bearer \S+$/.test(auth)) {
      return sendAwsError(res, 403, 'Authorization header requires a signature or a bearer API key.', 'AccessDeniedException');
    }
    const modelId = decodeURIComponent(m[1] ?? '');
    const slow = /^slow_(\d+)$/.exec(modelId);
    if (slow) await sleep(Number(slow[1]));
    const status = /(?:^|-)error_(\d{3})$/.exec(modelId);
    if (status) return sendAwsError(res, Number(status[1]), `scripted ${status[1]}`);
    if (scriptOf(modelId) === 'truncated') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end('{"output":{"message":{"role":"assis');
    }
    const tool = modelId.endsWith('-tool_use');
    if (m[2] === 'converse') return sendJson(res, 200, tool ? converseToolReply() : converseReply(modelId), { 'x-amzn-requestid': 'fake-req-1' });
    if (tool) return writeScriptedStream(res, modelId, { 'content-type': 'application/vnd.amazon.eventstream' }, converseToolFrames(), splitFrames(res));
    return writeScriptedStream(res, modelId, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': 'fake-req-2' }, converseStreamFrames(modelId), splitFrames(res));
  });
  return { ...fake, signatures };
}

/** Recomputes the request's signature from the headers it names and compares. */
async function verifySigV4(req: Recorded, credentials: Record<string, string>): Promise<SignatureCheck> {
  const auth = req.headers['authorization'] ?? '';
  const parsed = /Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})/.exec(auth);
  const [, accessKeyId = '', , region = '', service = '', signedList = ''] = parsed ?? [];
  const signedHeaders = signedList.split(';');
  const check = { url: req.url, accessKeyId, region, signedHeaders, valid: false };
  const secretAccessKey = credentials[accessKeyId];
  const amzDate = req.headers['x-amz-date'];
  if (!parsed || secretAccessKey === undefined || typeof amzDate !== 'string' || service !== 'bedrock') return check;
  const headers: Record<string, string> = {};
  for (const name of signedHeaders) {
    const v = req.headers[name];
    if (v !== undefined) headers[name] = Array.isArray(v) ? v.join(',') : v;
  }
  const [host = '', port] = (req.headers['host'] ?? '').split(':');
  const signer = new SignatureV4({
    service: 'bedrock',
    region,
    credentials: { accessKeyId, secretAccessKey, sessionToken: headers['x-amz-security-token'] },
    sha256: Sha256,
  });
  const date = new Date(amzDate.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z'));
  const resigned = await signer.sign(
    new HttpRequest({ method: req.method, protocol: 'http:', hostname: host, port: port ? Number(port) : undefined, path: req.url, headers, body: req.body }),
    { signingDate: date },
  );
  return { ...check, valid: resigned.headers['authorization'] === auth };
}

/** Converse usage: `inputTokens` is the prompt apart from cache reads and writes */
function usageOf(modelId: string, fallback: Record<string, number>) {
  const script = cacheScriptOf(modelId);
  if (!script) return fallback;
  const { plain, read, written } = script;
  return { inputTokens: plain, outputTokens: fallback['outputTokens'], totalTokens: plain + read + written + (fallback['outputTokens'] ?? 0), cacheReadInputTokens: read, cacheWriteInputTokens: written };
}

export function converseReply(modelId = '') {
  return {
    output: {
      message: {
        role: 'assistant',
        content: [{ reasoningContent: { reasoningText: { text: 'Weighing a greeting.', signature: 'fake-reasoning-signature' } } }, { text: 'Hello from the fake.' }],
      },
    },
    stopReason: 'end_turn',
    usage: usageOf(modelId, { inputTokens: 12, outputTokens: 5, totalTokens: 17, cacheReadInputTokens: 2, cacheWriteInputTokens: 0 }),
    metrics: { latencyMs: 42 },
  };
}

/** One event frame as Bedrock writes it (the `p` member is its padding). */
export function eventFrame(eventType: string, payload: Record<string, unknown>): Uint8Array {
  return codec.encode({
    headers: {
      ':event-type': { type: 'string', value: eventType },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'event' },
    },
    body: fromUtf8(JSON.stringify({ ...payload, p: 'abcdefghijklmnopqrstuvwxyzABCDEF'.slice(0, 7 + eventType.length) })),
  });
}

/** The frames of a streamed reply, exactly as the fake writes them. */
export function converseStreamFrames(modelId = ''): Uint8Array[] {
  return [
    eventFrame('messageStart', { role: 'assistant' }),
    eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { reasoningContent: { text: 'Weighing a greeting.' } } }),
    eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { reasoningContent: { signature: 'fake-reasoning-signature' } } }),
    eventFrame('contentBlockStop', { contentBlockIndex: 0 }),
    eventFrame('contentBlockDelta', { contentBlockIndex: 1, delta: { text: 'Hello' } }),
    eventFrame('contentBlockDelta', { contentBlockIndex: 1, delta: { text: ' from the fake.' } }),
    eventFrame('contentBlockStop', { contentBlockIndex: 1 }),
    eventFrame('messageStop', { stopReason: 'end_turn' }),
    eventFrame('metadata', { usage: usageOf(modelId, { inputTokens: 12, outputTokens: 6, totalTokens: 18, cacheReadInputTokens: 3 }), metrics: { latencyMs: 40 } }),
  ];
}

/** Writes each frame in two halves: the relay must carry partial frames. */
function splitFrames(res: ServerResponse) {
  return (frame: string | Uint8Array) => {
    const cut = Math.floor(frame.length / 2);
    res.write(frame.slice(0, cut));
    res.write(frame.slice(cut));
  };
}

export const BEDROCK_TOOL_USE = { toolUseId: 'tooluse_fake01', name: 'get_weather', input: { city: 'Paris' } };

export function converseToolReply() {
  return {
    output: { message: { role: 'assistant', content: [{ text: 'Checking.' }, { toolUse: BEDROCK_TOOL_USE }] } },
    stopReason: 'tool_use',
    usage: { inputTokens: 40, outputTokens: 12, totalTokens: 52 },
    metrics: { latencyMs: 30 },
  };
}

/** A streamed tool call: the input arrives as JSON text across two deltas. */
export function converseToolFrames(): Uint8Array[] {
  const input = JSON.stringify(BEDROCK_TOOL_USE.input);
  return [
    eventFrame('messageStart', { role: 'assistant' }),
    eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Checking.' } }),
    eventFrame('contentBlockStop', { contentBlockIndex: 0 }),
    eventFrame('contentBlockStart', { contentBlockIndex: 1, start: { toolUse: { toolUseId: BEDROCK_TOOL_USE.toolUseId, name: BEDROCK_TOOL_USE.name } } }),
    eventFrame('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: input.slice(0, 5) } } }),
    eventFrame('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: input.slice(5) } } }),
    eventFrame('contentBlockStop', { contentBlockIndex: 1 }),
    eventFrame('messageStop', { stopReason: 'tool_use' }),
    eventFrame('metadata', { usage: { inputTokens: 40, outputTokens: 12, totalTokens: 52 }, metrics: { latencyMs: 30 } }),
  ];
}
