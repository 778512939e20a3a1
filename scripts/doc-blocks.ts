import { readFileSync, writeFileSync } from 'node:fs';

/**
 * Generated blocks inside hand-written markdown: the text between
 * `<!-- BEGIN name -->` and `<!-- END name -->` belongs to a generator, so a
 * test can compare it with what the generator prints now.
 */
const markers = (name: string) => [`<!-- BEGIN ${name} (generated: do not edit by hand) -->`, `<!-- END ${name} -->`] as const;

/** The block's current text, or undefined when the file has no such block. */
export function readBlock(file: string, name: string): string | undefined {
  const text = readFileSync(file, 'utf8');
  const [begin, end] = markers(name);
  const from = text.indexOf(begin);
  const to = text.indexOf(end);
  if (from === -1 || to === -1 || to < from) return undefined;
  return text.slice(from + begin.length, to).trim();
}

/** Replaces the block's text with `content`; fails when the markers are missing. */
export function writeBlock(file: string, name: string, content: string): void {
  const text = readFileSync(file, 'utf8');
  const [begin, end] = markers(name);
  const from = text.indexOf(begin);
  const to = text.indexOf(end);
  if (from === -1 || to === -1 || to < from) throw new Error(`${file}: no ${name} block (${begin} … ${end})`);
  writeFileSync(file, `${text.slice(0, from + begin.length)}\n${content.trim()}\n${text.slice(to)}`);
}

/** `| a | b |` rows with `|` escaped inside cells. */
export const row = (cells: string[]): string => `| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`;
