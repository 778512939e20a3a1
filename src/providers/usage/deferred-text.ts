import type { StreamedTextSample, StreamUsageReader, Usage } from '../types.js';
import { StreamedText } from './streamed-text.js';

/** an incremental reader of a stream's bytes, chunk by chunk */
interface ByteSink {
  push(chunk: Buffer): void;
}

/**
 * Raw stream bytes kept unread per stream. A stream that runs past this has
 * the kept bytes decoded for their text in one batch (or, once it has reported
 * usage, dropped), so its memory stays bounded. 256 KiB holds about 1,200
 * chat chunks: most replies end inside it and are never parsed for text.
 */
export const KEPT_BYTES = 256 * 1024;

/**
 * The reply text of a stream, decoded only when it is asked for. The text is
 * needed only when a stream ends without a usage event, which most do not:
 * so the chunks are kept as they pass (no parse, no copy per event) and
 * decoded for their text when `sample()` is called or the kept bytes fill up.
 * The decoder sees the same bytes in the same order as it would have chunk
 * by chunk, so the text is the same.
 */
export class DeferredText {
  private chunks: Buffer[] = [];
  private size = 0;
  /** usage was read and the kept bytes filled up: the text is no longer kept */
  private dropped = false;
  private readonly text = new StreamedText();
  private decoder: ByteSink | undefined;

  /** `makeDecoder` makes an incremental decoder of the stream's bytes that hands their reply text to `out`; it is made on first use */
  constructor(private readonly makeDecoder: (out: StreamedText) => ByteSink) {}

  /**
   * Keeps `chunk` by reference, not copied: the upstream client hands over
   * views of the socket's reads, which are never reused. `usageRead`: the stream has
   * reported usage, so bytes past the bound are dropped rather than decoded.
   */
  keep(chunk: Buffer, usageRead: boolean): void {
    if (this.dropped) return;
    if (this.size + chunk.length > KEPT_BYTES) {
      if (usageRead) {
        this.dropped = true;
        this.chunks = [];
        this.size = 0;
        return;
      }
      this.flush();
    }
    this.chunks.push(chunk);
    this.size += chunk.length;
  }

  /** the reply text so far (bounded, see StreamedText); once usage was read and the bytes filled up, only what was decoded before */
  sample(): StreamedTextSample {
    this.flush();
    return this.text.sample();
  }

  private flush(): void {
    if (this.size === 0) return;
    const kept = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks, this.size);
    this.chunks = [];
    this.size = 0;
    this.decoder ??= this.makeDecoder(this.text);
    this.decoder.push(kept);
  }
}

/** A stream's usage reader: `scanner` reads usage as the chunks pass (`usage` is what it has read), `text` keeps them for a count should none come. */
export function deferredTextReader(scanner: ByteSink, usage: () => Usage | undefined, text: DeferredText): StreamUsageReader {
  return {
    push: (chunk) => {
      scanner.push(chunk);
      text.keep(chunk, usage() !== undefined);
    },
    usage,
    streamedText: () => text.sample(),
  };
}
