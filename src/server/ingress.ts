import type { HttpResponse } from 'uWebSockets.js';
import type { GatewayError } from '../errors.js';
import type { LoadMonitor } from '../telemetry/load-monitor.js';

export interface IngressOptions {
  monitor: LoadMonitor;
  /** GW_INGRESS_BUDGET: declared body bytes in flight before a request is shed; undefined = off */
  budget: number | undefined;
  /** GW_HEAVY_BODY_BYTES: from this size a body is shed while the event loop is stalled */
  heavyBytes: number;
}

// fixed texts, so each surface's answer to each is rendered once (shed-answers.ts)
const BUDGET_PASSED = 'the request bodies in flight and this one would pass the gateway ingress budget';
const LOOP_STALLED = 'the gateway event loop is stalled: heavy request bodies are shed for now; light ones are served';
const CHUNKED_PAST_BUDGET = 'a chunked body passed the ingress budget while other requests are in flight';

/**
 * Transport-side shedding, decided from the headers before a byte of the
 * body is read (SPEC overloaded rule 1a): a declared size that would take
 * the in-flight bytes past the ingress budget (a body larger than the whole
 * budget only when nothing else is in flight), and a heavy body while the
 * event loop has been stalled. A chunked body declares nothing: it counts
 * the bytes read so far, and is heavy, since its size is unknown.
 */
export class Ingress {
  constructor(private readonly opts: IngressOptions) {}

  /** the refusal for a request declaring `length` body bytes (-1: chunked), or undefined to admit it */
  refuse(length: number): GatewayError | undefined {
    const { monitor, budget, heavyBytes } = this.opts;
    if (budget !== undefined && length > 0 && !this.fits(length)) {
      return monitor.shed('ingress_budget', BUDGET_PASSED);
    }
    if ((length < 0 || length >= heavyBytes) && monitor.loopStalled) {
      return monitor.shed('loop_stall', LOOP_STALLED);
    }
    return undefined;
  }

  /** a chunked body grew by `n` bytes: the refusal once it passes the budget beside other requests */
  grew(n: number): GatewayError | undefined {
    const { monitor, budget } = this.opts;
    monitor.grow(n);
    if (budget === undefined || monitor.inflightBytes <= budget || monitor.inflightRequests <= 1) return undefined;
    return monitor.shed('ingress_budget', CHUNKED_PAST_BUDGET);
  }

  private fits(length: number): boolean {
    const { monitor, budget } = this.opts;
    // the request asking is counted in flight already
    if (length > (budget as number)) return monitor.inflightRequests <= 1;
    return monitor.inflightBytes + length <= (budget as number);
  }
}

export interface BodyReader {
  body(body: Buffer): void;
  /** a chunked body grew past the largest accepted */
  tooLarge(): void;
  /** a chunked body's growth: a refusal stops the read */
  grew(n: number): GatewayError | undefined;
  refused(err: GatewayError): void;
}

/**
 * Reads a body as it arrives, copying each chunk once into a buffer that
 * grows by doubling (the chunk's memory belongs to uWS only during the call).
 * Nothing is allocated from the declared Content-Length alone: a client that
 * declares 32 MB and sends nothing holds no memory, and one that sends part
 * of a body holds at most twice what it sent. With a declared length the
 * buffer never grows past it; a chunked body may keep up to twice its size
 * for the request's life, the price of not copying it again to trim.
 */
export function readBody(res: HttpResponse, declared: number, max: number, reader: BodyReader): void {
  let body: Buffer | undefined;
  let total = 0;
  let stopped = false;
  res.onData((chunk, isLast) => {
    if (stopped) return;
    const n = declared > 0 ? Math.min(chunk.byteLength, declared - total) : chunk.byteLength;
    if (declared < 0) {
      if (total + n > max) {
        stopped = true;
        return reader.tooLarge();
      }
      const refusal = reader.grew(n);
      if (refusal) {
        stopped = true;
        return reader.refused(refusal);
      }
    }
    if (n > 0) {
      const limit = declared > 0 ? declared : max;
      if (body === undefined) body = Buffer.allocUnsafe(isLast ? n : Math.min(limit, 2 * n));
      else if (total + n > body.length) body = grown(body, total, Math.min(limit, Math.max(total + n, 2 * body.length)));
      body.set(new Uint8Array(chunk, 0, n), total);
      total += n;
    }
    if (isLast) reader.body(body === undefined ? Buffer.alloc(0) : body.subarray(0, total));
  });
}

/** `body`'s first `used` bytes in a new buffer of `size` bytes */
function grown(body: Buffer, used: number, size: number): Buffer {
  const next = Buffer.allocUnsafe(size);
  body.copy(next, 0, 0, used);
  return next;
}
