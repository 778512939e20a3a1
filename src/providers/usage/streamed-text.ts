import { countTokens } from './tokenizer.js';
import type { StreamedTextSample, Usage } from '../types.js';

/**
 * Text kept per stream for counting: about 16k tokens. Past it only the
 * length is kept and the count is scaled from the sample, so a long stream
 * costs no more memory than a short one and its count stays one bounded
 * tokenizer run.
 */
export const SAMPLE_CHARS = 64 * 1024;
/** the prompt is counted from at most this much of the request body, scaled the same way */
const PROMPT_SAMPLE_BYTES = 64 * 1024;

/**
 * The reply text a stream has carried so far (content, reasoning, tool-call
 * arguments), appended piece by piece as the usage reader meets it, for a
 * count when the stream ends without a usage event.
 */
export class StreamedText {
  private readonly parts: string[] = [];
  private kept = 0;
  private chars = 0;

  add(piece: unknown): void {
    if (typeof piece !== 'string' || piece === '') return;
    this.chars += piece.length;
    if (this.kept >= SAMPLE_CHARS) return;
    const take = piece.length <= SAMPLE_CHARS - this.kept ? piece : piece.slice(0, SAMPLE_CHARS - this.kept);
    this.parts.push(take);
    this.kept += take.length;
  }

  sample(): StreamedTextSample {
    return { text: this.parts.join(''), chars: this.chars };
  }
}

/** tokens of `text`, scaled up when it is a sample of `chars` characters */
function scaledCount(text: string, chars: number): number {
  if (text === '') return 0;
  const n = countTokens(text);
  return chars > text.length ? Math.ceil((n * chars) / text.length) : n;
}

/**
 * Usage the gateway counts itself for a stream that ended without reporting
 * any: the streamed reply text for output, the request body for the prompt
 * (its JSON framing included, so the prompt is rather over- than undercounted).
 * One tokenizer run over bounded samples, at the end of the stream.
 */
export function countedUsage(streamed: StreamedTextSample, requestBody: Buffer): Usage {
  const sampled = Math.min(requestBody.length, PROMPT_SAMPLE_BYTES);
  const prompt = requestBody.toString('utf8', 0, sampled);
  return {
    input_tokens: scaledCount(prompt, sampled === 0 ? 0 : Math.round((prompt.length * requestBody.length) / sampled)),
    output_tokens: scaledCount(streamed.text, streamed.chars),
    cached_tokens: 0,
  };
}
