import { GatewayError } from '../errors.js';
import type { HeaderList } from '../http/types.js';
import { failureKind } from '../upstream/client.js';
import { OriginFull } from '../upstream/inflight.js';
import { DelegatingSink } from './delegating-sink.js';
import type { HoldRule } from './types.js';


/** Vendor answers after which the next candidate is tried: rate limited, or failed on its side. */
const retryableStatus = (status: number): boolean => status === 429 || status >= 500;

/** The gateway's own summaries of an upstream that could not be reached, did not answer, or was full. */
const retryableError = (err: unknown): boolean => err instanceof OriginFull || (err instanceof GatewayError && (err.type === 'upstream_unavailable' || err.type === 'upstream_timeout'));

/** The next candidate (another model) is tried after these. */
export const NEXT_CANDIDATE: HoldRule = { status: retryableStatus, error: retryableError };

/**
 * A connection that was never made (refused, unreachable, name not found):
 * nothing of the call was sent, so another server may take it. A reset is not
 * one: undici cannot tell whether the request had gone out before it.
 */
export const neverConnected = (err: unknown): boolean => err instanceof GatewayError && err.type === 'upstream_unavailable' && err.cause instanceof Error && failureKind(err.cause) === 'connect';

/** Nothing of the call left the gateway (never connected, or its origin was full): another server may take it. */
export const nothingSent = (err: unknown): boolean => err instanceof OriginFull || neverConnected(err);

/**
 * The caller's sink as one attempt of a call sees it when another attempt
 * may follow: a failure `rule` holds (for the next candidate: a vendor 429 or
 * 5xx, an upstream that could not be reached or did not answer) is held back
 * instead of written (`heldBack` tells the pipeline to try again,
 * `heldError` is the gateway's failure, if it was one, `heldStatus` the
 * vendor's status). `replay` writes what was held after all, when no other
 * attempt is left. Anything else, and everything once the status line is
 * out, passes through.
 */
export class FallbackSink extends DelegatingSink {
  /** this attempt's failure was held back */
  heldBack = false;
  /** the gateway's error held back (undefined when a vendor answer was) */
  heldError: unknown;
  /** the vendor answer's status held back (0 when the gateway's error was) */
  heldStatus = 0;
  /** the vendor answer's headers held back (its retry hints) */
  heldHeaders: HeaderList | undefined;
  private held: (() => void) | undefined;

  constructor(
    inner: ConstructorParameters<typeof DelegatingSink>[0],
    private readonly rule: HoldRule = NEXT_CANDIDATE,
  ) {
    super(inner);
  }

  override send(status: number, headers: HeaderList, body: Uint8Array | string): void {
    if (!this.inner.started && this.rule.status(status)) {
      this.heldBack = true;
      this.heldStatus = status;
      this.heldHeaders = headers;
      this.held = () => this.inner.send(status, headers, body);
    } else this.inner.send(status, headers, body);
  }

  override fail(err: unknown, extraHeaders?: HeaderList): void {
    if (!this.inner.started && this.rule.error(err)) {
      this.heldBack = true;
      this.heldError = err;
      this.held = () => this.inner.fail(err, extraHeaders);
    } else this.inner.fail(err, extraHeaders);
  }

  /** writes the held failure to the caller: no other attempt is left to mend it */
  replay(): void {
    const held = this.held;
    this.held = undefined;
    held?.();
  }
}
