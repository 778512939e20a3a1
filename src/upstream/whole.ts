import type { UpstreamRequest } from '../providers/types.js';
import type { Upstream, UpstreamSink } from './client.js';

/** A whole upstream reply: status, headers and the body read to its end. */
export interface WholeReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** Control calls' replies (a model list, a load answer) are small; past this the call is refused rather than held. */
const MAX_CONTROL_REPLY_BYTES = 4 * 1024 * 1024;

/**
 * Sends one request over the gateway's pools and reads the reply whole: for
 * the gateway's own control calls to an upstream (loading a LoRA adapter,
 * listing a server's models), never for relayed replies.
 */
export function requestWhole(upstream: Upstream, req: UpstreamRequest): Promise<WholeReply> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    let status = 0;
    let headers: WholeReply['headers'] = {};
    const sink: UpstreamSink = {
      onHeaders(s, h) {
        status = s;
        headers = h;
      },
      onData(chunk) {
        size += chunk.length;
        if (size > MAX_CONTROL_REPLY_BYTES) call.abort(new Error(`reply of ${req.origin}${req.path} larger than ${MAX_CONTROL_REPLY_BYTES} bytes`));
        else parts.push(chunk);
        return true;
      },
      onEnd: () => resolve({ status, headers, body: Buffer.concat(parts, size) }),
      onError: reject,
    };
    const call = upstream.dispatch(req, sink);
  });
}
