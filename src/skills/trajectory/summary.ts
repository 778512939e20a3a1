import { textTokens } from '../tokens.js';
import type { TextPart } from '../views/view.js';

/**
 * The deterministic, extractive summary a fold leaves in place of the turns
 * it removes: one line per part in order, the user's and the assistant's
 * text clipped, each tool call by name with its arguments abbreviated, each
 * result clipped with its size in characters and lines.
 */

const CLIP = { text: 300, args: 120, result: 200 } as const;

const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();
const clip = (s: string, n: number) => (s.length <= n ? s : `${s.slice(0, n)}… [+${s.length - n} chars]`);
const lineCount = (s: string) => s.split('\n').length;

/** the string values of a structured result (a Gemini `response`, a Converse `json` block), else its JSON text */
function resultText(p: TextPart): string {
  if (!p.structured) return p.text;
  const strings: string[] = [];
  const collect = (v: unknown): void => {
    if (typeof v === 'string') strings.push(v);
    else if (Array.isArray(v)) v.forEach(collect);
    else if (typeof v === 'object' && v !== null) Object.values(v).forEach(collect);
  };
  collect(JSON.parse(p.text) as unknown);
  return strings.length > 0 ? strings.join('\n') : p.text;
}

export function summaryLine(p: TextPart): string {
  switch (p.kind) {
    case 'tool_call':
      return `- called ${p.name ?? 'a tool'}(${clip(oneLine(p.text), CLIP.args)})`;
    case 'tool_result': {
      const text = resultText(p);
      return `- result (${text.length} chars, ${lineCount(text)} lines): ${clip(oneLine(text), CLIP.result)}`;
    }
    default:
      return `- ${p.kind}: ${clip(oneLine(p.text), CLIP.text)}`;
  }
}

export const summaryHeader = (turns: number, calls: number) => `[Earlier work folded by the gateway: ${turns} turns with ${calls} tool calls, extracted below.]`;

/** The summary lines of a run of parts, with their token counts computed once so ranges can be priced by sums. */
export class SummaryLines {
  readonly lines: string[];
  /** prefix sums: tokens of lines [0, i) plus one newline each */
  private readonly prefix: number[];

  constructor(readonly parts: readonly TextPart[]) {
    this.lines = parts.map(summaryLine);
    this.prefix = [0];
    for (const l of this.lines) this.prefix.push(this.prefix[this.prefix.length - 1]! + textTokens(l) + 1);
  }

  /** tokens of the lines of parts [from, to), the header aside */
  tokens(from: number, to: number): number {
    return this.prefix[to]! - this.prefix[from]!;
  }

  text(from: number, to: number, turns: number): string {
    const calls = this.parts.slice(from, to).filter((p) => p.kind === 'tool_call').length;
    return [summaryHeader(turns, calls), ...this.lines.slice(from, to)].join('\n');
  }
}
