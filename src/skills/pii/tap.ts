import type { HeaderList, ResponseSink } from '../../http/types.js';
import { DelegatingSink } from '../../pipeline/delegating-sink.js';
import type { ReplyTap } from '../../pipeline/types.js';
import type { StageHalf } from '../engine.js';
import { restoreBody, restoreText, streamRestorer } from './restore.js';

/**
 * pii_redaction's main-thread half: an acting stage that replaced values
 * hands its placeholder → value map to a tap on the reply, which puts the
 * caller's values back in what the caller receives (whole replies and
 * streams, in the caller's format: a translation has already happened). The
 * map lives in this request's tap only: never in a report, a row or a log.
 * In shadow nothing was replaced, so there is nothing to restore.
 */
export function piiHalf(surface: string, acting: boolean): StageHalf | undefined {
  if (!acting) return undefined;
  let tap: ReplyTap | undefined;
  return {
    finish(result) {
      const restore = result?.restore;
      if (restore !== undefined && Object.keys(restore).length > 0) tap = { wrap: (sink) => new RestoringSink(sink, surface, restore) };
      return result;
    },
    get tap() {
      return tap;
    },
  };
}

const contentTypeOf = (headers: HeaderList): string => headers.find(([k]) => k === 'content-type')?.[1] ?? '';
const isStream = (contentType: string) => contentType.startsWith('text/event-stream') || contentType.startsWith('application/vnd.amazon.eventstream');

type Restorer = NonNullable<ReturnType<typeof streamRestorer>>;

/** The caller's sink with the placeholders of the reply replaced by the caller's values. */
class RestoringSink extends DelegatingSink {
  private stream: Restorer | undefined;

  constructor(
    inner: ResponseSink,
    private readonly surface: string,
    private readonly restore: Readonly<Record<string, string>>,
  ) {
    super(inner);
  }

  override send(status: number, headers: HeaderList, body: Uint8Array | string): void {
    const bytes = typeof body === 'string' ? Buffer.from(body) : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    // a JSON reply takes the values JSON-escaped; any other text takes them as they are
    const restored = contentTypeOf(headers).includes('json') ? restoreBody(bytes, this.restore) : Buffer.from(restoreText(bytes.toString('utf8'), this.restore));
    this.inner.send(status, headers, restored);
  }

  override start(status: number, headers: HeaderList): void {
    const type = contentTypeOf(headers);
    this.stream = isStream(type) ? streamRestorer(this.surface, this.restore) : undefined;
    this.inner.start(status, headers);
  }

  override write(chunk: Uint8Array | string): boolean {
    if (this.stream === undefined) return this.inner.write(chunk);
    const out = this.stream.push(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    // a chunk wholly held back (a placeholder's first half) writes nothing: the client is not slow
    return out.length === 0 ? true : this.inner.write(out);
  }

  override end(chunk?: Uint8Array | string): void {
    if (this.stream === undefined) return this.inner.end(chunk);
    const last = chunk === undefined ? '' : this.stream.push(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    const rest = this.stream.end();
    const tail = typeof last === 'string' && typeof rest === 'string' ? last + rest : Buffer.concat([Buffer.from(last), Buffer.from(rest)]);
    this.inner.end(tail.length === 0 ? undefined : tail);
  }
}
