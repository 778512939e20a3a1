/**
 * The structural passes of prompt compaction, on one part's text. Each keeps
 * the meaning: fenced code (``` … ```) is never touched; JSON is minified
 * outside its strings only (numbers and strings keep their exact spelling).
 */

/** a block repeated later is replaced only from this size on (the marker must be much shorter) */
export const MIN_REPEAT_CHARS = 256;
/** tool output longer than this has its middle elided */
export const ELIDE_OVER_CHARS = 12_000;
const KEEP_HEAD_CHARS = 4_000;
const KEEP_TAIL_CHARS = 2_000;

export interface Segment {
  code: boolean;
  text: string;
}

const FENCE = /^[ \t]*```[^\n]*\n[\s\S]*?(?:^[ \t]*```[ \t]*$|(?![\s\S]))/gm;

/** the text split into fenced code regions (an unclosed fence runs to the end) and the prose between them */
export function segments(text: string): Segment[] {
  const out: Segment[] = [];
  let at = 0;
  for (const m of text.matchAll(FENCE)) {
    if (m.index > at) out.push({ code: false, text: text.slice(at, m.index) });
    out.push({ code: true, text: m[0] });
    at = m.index + m[0].length;
  }
  if (at < text.length) out.push({ code: false, text: text.slice(at) });
  return out;
}

/** prose whitespace: trailing blanks on lines, runs of blank lines down to one */
export const squeezeWhitespace = (prose: string): string => prose.replace(/[ \t]+$/gm, '').replace(/\n{3,}/g, '\n\n');

/** the text with every whitespace character outside JSON strings removed; undefined when it is not a JSON object or array */
export function minifyJson(text: string): string | undefined {
  const t = text.trim();
  if (!(t.startsWith('{') || t.startsWith('['))) return undefined;
  try {
    JSON.parse(t);
  } catch {
    return undefined;
  }
  let out = '';
  let inString = false;
  let from = 0;
  for (let i = 0; i < t.length; i++) {
    const c = t[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === ' ' || c === '\n' || c === '\r' || c === '\t') {
      out += t.slice(from, i);
      from = i + 1;
    }
  }
  return out + t.slice(from);
}

const fmt = (n: number) => n.toLocaleString('en-US');

/** a repeat's marker: where the first copy is */
export const repeatMarker = (chars: number, where: string) => `[gateway: ${fmt(chars)} characters omitted, identical to the block first given ${where}]`;

/** where a part sits, as a repeat marker names it */
export const placeOf = (kind: string, turn: number) => (kind === 'system' ? 'in the system instructions' : `in turn ${turn}`);

/** the head and tail of an oversized tool output with a marker saying how much of the middle went; undefined when it is not oversized */
export function elideMiddle(text: string): string | undefined {
  if (text.length <= ELIDE_OVER_CHARS) return undefined;
  // cut at line ends so no line is left half
  const headEnd = text.lastIndexOf('\n', KEEP_HEAD_CHARS);
  const head = headEnd > 0 ? headEnd + 1 : KEEP_HEAD_CHARS;
  const tailStart = text.indexOf('\n', text.length - KEEP_TAIL_CHARS);
  const tail = tailStart > 0 && tailStart >= head ? tailStart + 1 : text.length - KEEP_TAIL_CHARS;
  const middle = text.slice(head, tail);
  const lines = middle.split('\n').length - 1;
  return `${text.slice(0, head)}[gateway: ${fmt(middle.length)} characters (${fmt(lines)} lines) of tool output elided from the middle]\n${text.slice(tail)}`;
}
