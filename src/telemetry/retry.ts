import { crc32 } from 'node:zlib';

/** a body seen again from the same key within this window is a retry */
const WINDOW_MS = 60_000;
/** the bodies remembered per process; the oldest go first */
const MAX_REMEMBERED = 10_000;

/**
 * A fingerprint of a request body, its length and CRC-32: only it is
 * remembered, never the body. It runs on every request, and a CRC costs a
 * third of a SHA-1 on a 32 KB body (5 against 15 µs). Two bodies of one key
 * are taken for one only with the same length and CRC within a minute, about
 * one chance in four billion per pair: a retry count off by that much is
 * nothing beside the SDKs' own retry header.
 */
export const bodyDigest = (body: Buffer): string | undefined => (body.length === 0 ? undefined : `${body.length.toString(36)}:${crc32(body).toString(36)}`);

/**
 * Recognises client retries: the official SDKs' `x-stainless-retry-count`
 * above 0, or the same body from the same key within a minute in another
 * request (a request's own fallback attempts send its body again, and are the
 * gateway's doing, not the caller's). The memory of recent bodies is per
 * process and bounded.
 */
export class RetryDetector {
  private readonly seen = new Map<string, { at: number; requestId: string }>();

  isRetry(keyId: string, requestId: string, headers: Readonly<Record<string, string>>, digest: string | undefined, now: number): boolean {
    const count = Number(headers['x-stainless-retry-count'] ?? 0);
    let repeated = false;
    if (digest !== undefined) {
      const id = `${keyId} ${digest}`;
      const last = this.seen.get(id);
      repeated = last !== undefined && last.requestId !== requestId && now - last.at <= WINDOW_MS;
      // re-inserted so insertion order stays oldest first
      this.seen.delete(id);
      this.seen.set(id, { at: now, requestId });
      this.evict(now);
    }
    return count > 0 || repeated;
  }

  private evict(now: number): void {
    for (const [id, { at }] of this.seen) {
      if (this.seen.size <= MAX_REMEMBERED && now - at <= WINDOW_MS) return;
      this.seen.delete(id);
    }
  }
}
